/**
 * Gives a notebook cell's editor the TenFlang language while its first line is a
 * `%%tenflang` magic line, and gives it back to the notebook's language (Python) otherwise.
 */
import { Compartment, EditorState, Prec } from '@codemirror/state';
import type { Extension, Text } from '@codemirror/state';

import { MAGIC_LINE, tenflang } from './language';

// Highest precedence: CodeMirror uses the first `language` it finds, and the notebook's own
// language (set by JupyterLab from the kernel) is also in every cell's configuration.
const TENFLANG: Extension = Prec.highest(tenflang);
const NONE: Extension = [];

// One compartment (a key) for every editor: each editor's state holds its own content.
const cellLanguage = new Compartment();

/** Whether a cell's text starts with a `%%tenflang` magic line. */
export function isTenFlangCell(doc: Text | string): boolean {
  const first = typeof doc === 'string' ? doc.split('\n', 1)[0] : doc.line(1).text;
  return MAGIC_LINE.test(first);
}

function current(state: EditorState): boolean {
  return cellLanguage.get(state) === TENFLANG;
}

// Every transaction, not only edits: the compartment starts from the model's text, which an
// editor may receive after it was created; a check of line 1 costs next to nothing.
const follow = EditorState.transactionExtender.of(tr => {
  const wanted = isTenFlangCell(tr.newDoc);
  if (wanted === current(tr.startState)) {
    return null;
  }
  return { effects: cellLanguage.reconfigure(wanted ? TENFLANG : NONE) };
});

/** The editor extension for a cell whose text is `source` when its editor is made. */
export function tenflangCells(source: string): Extension {
  return [cellLanguage.of(isTenFlangCell(source) ? TENFLANG : NONE), follow];
}
