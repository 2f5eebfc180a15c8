// The sqlstream extension: starts `sqlstream lsp` (stdio) for .ssql files.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('sqlstream');
  const [command, ...args] = config.get('command', ['sqlstream', 'lsp']);
  const server = { command, args };
  client = new LanguageClient('sqlstream', 'sqlstream', { run: server, debug: server }, {
    documentSelector: [{ language: 'ssql' }],
    synchronize: { configurationSection: 'sqlstream' },
    initializationOptions: {
      variables: config.get('variables', {}),
      docsUrl: config.get('docsUrl'),
    },
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
