/**
 * JupyterLab 4 / Notebook 7 plugins: TenFlang highlighting in `%%tenflang` cells, and the
 * training panel's sliders named for screen readers.
 */
import {
  EditorExtensionRegistry,
  IEditorExtensionRegistry
} from '@jupyterlab/codemirror';
import type { IEditorExtensionFactory } from '@jupyterlab/codemirror';
import type { IPlugin } from '@lumino/coreutils';

import { tenflangCells } from './cells';
import { installStyle } from './language';
import { watchPanels } from './panel';

// JupyterFrontEndPlugin<void> is this type; typing it so spares @jupyterlab/application.
const plugin: IPlugin<unknown, void> = {
  id: 'tenflang-nb:highlight',
  description: 'TenFlang syntax highlighting in %%tenflang cells.',
  autoStart: true,
  requires: [IEditorExtensionRegistry],
  activate: (_app: unknown, registry: IEditorExtensionRegistry): void => {
    installStyle(document);
    registry.addExtension({
      name: 'tenflang-nb:highlight',
      // Called for every editor JupyterLab makes: cells, consoles, file editors.
      factory: (options: IEditorExtensionFactory.IOptions) =>
        EditorExtensionRegistry.createImmutableExtension(
          tenflangCells(options.model.sharedModel.getSource())
        )
    });
  }
};

const panelSliders: IPlugin<unknown, void> = {
  id: 'tenflang-nb:panel-sliders',
  description: "Names the training panel's sliders and says their values to screen readers.",
  autoStart: true,
  activate: (): void => {
    watchPanels(document.body);
  }
};

export default [plugin, panelSliders];
