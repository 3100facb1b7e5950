/**
 * The training panel's sliders and pictures, named for screen readers.
 *
 * ipywidgets draws a slider with noUiSlider, whose handle (role="slider", the element that
 * takes the focus) has no accessible name, and whose aria-valuenow and aria-valuetext are
 * the slider's own position: a log slider's exponent, a selection slider's index. A screen
 * reader would say "slider, -3" for a learning rate of 0.001. ipywidgets passes noUiSlider
 * no option to change that, so this names each handle in the package's panels (inside a
 * `.tenflang-training-panel`) by the widget's label and gives it the readout as its value,
 * again whenever the panel's widgets change. ipywidgets' Image has no alt text either: the
 * panel writes each picture's (`tf-picture-KEY`) into a hidden `data-tf-alt="KEY"` element,
 * which this copies to the image. Nothing outside the panels is touched.
 */

const PANEL = '.tenflang-training-panel';
const HANDLE = '.noUi-handle[role="slider"]';

let labelled = 0; // ids given to labels that had none

/** Name and value every slider handle in ``panel`` after its widget's label and readout. */
export function labelSliders(panel: Element): void {
  panel.querySelectorAll('.widget-slider').forEach(slider => {
    const handle = slider.querySelector(HANDLE);
    const label = slider.querySelector('.widget-label');
    if (handle === null || label === null) {
      return;
    }
    if (!label.id) {
      label.id = `tenflang-slider-label-${++labelled}`;
    }
    if (handle.getAttribute('aria-labelledby') !== label.id) {
      handle.setAttribute('aria-labelledby', label.id);
    }
    const readout = slider.querySelector('.widget-readout');
    const value = readout?.textContent?.trim();
    if (value && handle.getAttribute('aria-valuetext') !== value) {
      handle.setAttribute('aria-valuetext', value);
    }
  });
}

/** Give every picture in ``panel`` the alt text the panel wrote for it. */
export function labelPictures(panel: Element): void {
  panel.querySelectorAll('[data-tf-alt]').forEach(said => {
    const key = said.getAttribute('data-tf-alt');
    const alt = said.textContent ?? '';
    panel.querySelectorAll(`img.tf-picture-${key}`).forEach(image => {
      if (image.getAttribute('alt') !== alt) {
        image.setAttribute('alt', alt);
      }
    });
  });
}

/** Watch the document: a panel drawn or changed gets its sliders labelled, once a frame. */
export function watchPanels(root: Element): MutationObserver {
  const pending = new Set<Element>();
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    pending.forEach(panel => {
      labelSliders(panel);
      labelPictures(panel);
    });
    pending.clear();
  };
  const observer = new MutationObserver(records => {
    for (const record of records) {
      const target =
        record.target instanceof Element ? record.target : record.target.parentElement;
      const panel = target?.closest(PANEL);
      if (panel) {
        pending.add(panel);
      } else if (target) {
        // a panel (or a notebook holding one) attached in one piece
        record.addedNodes.forEach(node => {
          if (node instanceof Element) {
            if (node.matches(PANEL)) {
              pending.add(node);
            }
            node.querySelectorAll(PANEL).forEach(p => pending.add(p));
          }
        });
      }
    }
    if (pending.size && !scheduled) {
      scheduled = true;
      requestAnimationFrame(flush);
    }
  });
  // noUiSlider writes its own aria-valuetext on every move: watched, to be set back
  observer.observe(root, {
    childList: true,
    subtree: true,
    characterData: true,
    attributeFilter: ['aria-valuetext']
  });
  root.querySelectorAll(PANEL).forEach(panel => {
    labelSliders(panel);
    labelPictures(panel);
  });
  return observer;
}
