// The sqlstream extension: starts `sqlstream lsp` (stdio) for .ssql files.
//
// Workspace Trust: the server imports the workspace's Python modules (CREATE FUNCTION,
// foreach_batch functions) only when told `initializationOptions.trust`, which is
// `vscode.workspace.isTrusted`; when the user grants trust, the server is started again
// with it. In an untrusted workspace, VS Code ignores the workspace's `sqlstream.command`
// (package.json: capabilities.untrustedWorkspaces.restrictedConfigurations).
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function createClient() {
  const config = vscode.workspace.getConfiguration('sqlstream');
  const [command, ...args] = config.get('command', ['sqlstream', 'lsp']);
  const server = { command, args };
  return new LanguageClient('sqlstream', 'sqlstream', { run: server, debug: server }, {
    // a pipeline test file: go to definition into its pipeline (no diagnostics)
    documentSelector: [{ language: 'ssql' }, { scheme: 'file', pattern: '**/*.test.yaml' }],
    synchronize: { configurationSection: 'sqlstream' },
    initializationOptions: {
      variables: config.get('variables', {}),
      docsUrl: config.get('docsUrl'),
      trust: vscode.workspace.isTrusted,
    },
  });
}

async function activate(context) {
  client = createClient();
  context.subscriptions.push(
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      // trust is given once, at start: a new server with initializationOptions.trust
      const previous = client;
      client = createClient();
      if (previous) {
        await previous.stop();
      }
      await client.start();
    }),
    { dispose: () => (client ? client.stop() : undefined) },
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
