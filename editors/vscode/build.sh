#!/bin/sh
# Build the VS Code extension: install its npm packages, test the grammar on the example
# pipelines, and package editors/vscode/sqlstream.vsix. Needs node (>= 20) and npm.
set -eu
cd "$(dirname "$0")"
# a clean install from the lock file the first time; later runs only bring it up to date
if [ -f package-lock.json ] && [ ! -d node_modules ]; then
    npm ci --no-audit --no-fund
else
    npm install --no-audit --no-fund
fi
node --test test/
npx --no-install vsce package --allow-missing-repository --skip-license -o sqlstream.vsix
ls -l sqlstream.vsix
