/**
 * JupyterLab 4 / Notebook 7 plugin: TenFlang highlighting in `%%tenflang` cells.
 */
import {
  EditorExtensionRegistry,
  IEditorExtensionRegistry
} from '@jupyterlab/codemirror';
import type { IEditorExtensionFactory } from '@jupyterlab/codemirror';
import type { IPlugin } from '@lumino/coreutils';

import { tenflangCells } from './cells';
import { installStyle } from './language';

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

export default plugin;
