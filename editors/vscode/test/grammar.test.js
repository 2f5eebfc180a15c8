// Tokenises every example pipeline (examples/**/*.ssql) with the extension's TextMate
// grammar, as VS Code does (vscode-textmate + vscode-oniguruma), and checks the scope of
// each construct of the dialect. Run: node --test test/
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const GRAMMAR = path.join(__dirname, '..', 'syntaxes', 'ssql.tmLanguage.json');

function examples(dir = path.join(ROOT, 'examples')) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return examples(full);
    return entry.name.endsWith('.ssql') ? [full] : [];
  }).sort();
}

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
  await oniguruma.loadWASM(wasm);
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, 'utf8'), GRAMMAR),
  });
  return registry.loadGrammar('source.ssql');
}

// [{line, text, scopes}] of every token of a file.
function tokenize(grammar, text) {
  let state = vsctm.INITIAL;
  const tokens = [];
  text.split('\n').forEach((line, number) => {
    const result = grammar.tokenizeLine(line, state);
    for (const token of result.tokens) {
      tokens.push({ line: number, text: line.slice(token.startIndex, token.endIndex),
        scopes: token.scopes });
    }
    state = result.ruleStack;
  });
  return tokens;
}

const has = (token, scope) => token.scopes.some((s) => s.startsWith(scope));
const show = (t) => `${t.text} [${t.scopes.join(" ")}] line ${t.line + 1}`;
const find = (tokens, pattern) => tokens.filter((t) => pattern.test(t.text.trim()));

let grammar;
const files = examples();

test.before(async () => { grammar = await loadGrammar(); });

test('there are example pipelines to tokenise', () => {
  assert.ok(files.length >= 9, `found ${files.length}`);
});

for (const file of files) {
  const name = path.relative(ROOT, file);
  test(`scopes of ${name}`, () => {
    const text = fs.readFileSync(file, 'utf8');
    const tokens = tokenize(grammar, text);
    // every line that starts with -- is one comment
    text.split('\n').forEach((line, number) => {
      if (!line.trimStart().startsWith('--')) return;
      const lineTokens = tokens.filter((t) => t.line === number && t.text.trim());
      assert.ok(lineTokens.every((t) => has(t, 'comment.line.double-dash.ssql')), `${name}:${number + 1}`);
    });
    const code = tokens.filter((t) => !has(t, 'comment'));
    // CREATE STREAM|TABLE|VIEW|SINK name: the kind and the declared name
    const declared = [...text.replace(/--.*$/gm, '').matchAll(/CREATE\s+(STREAM|TABLE|VIEW|SINK)\s+(\w+)/gi)];
    assert.ok(declared.length > 0, name);
    for (const [, kind, relation] of declared) {
      assert.ok(code.some((t) => t.text === kind && has(t, 'storage.type.relation.ssql')), `${name}: ${kind}`);
      assert.ok(code.some((t) => t.text === relation && has(t, 'entity.name.type.relation.ssql')),
        `${name}: ${relation}`);
    }
    for (const [, sink] of text.replace(/--.*$/gm, '').matchAll(/INSERT\s+INTO\s+(\w+)/gi)) {
      assert.ok(code.some((t) => t.text === sink && has(t, 'entity.name.type.sink.ssql')), `${name}: ${sink}`);
    }
    for (const t of find(code, /^WATERMARK$/i)) assert.ok(has(t, 'keyword.other.watermark.ssql'), show(t));
    for (const t of find(code, /^EMIT$/i)) assert.ok(has(t, 'keyword.control.emit.ssql'), show(t));
    for (const t of find(code, /^(TUMBLE|HOP|SESSION)$/i)) {
      assert.ok(has(t, 'support.function.window-tvf.ssql'), `${name}: ${t.text}`);
    }
    for (const t of find(code, /^\$\{/)) assert.ok(has(t, 'variable.other.substitution.ssql'), show(t));
    for (const t of find(code, /^(SELECT|FROM|WHERE|GROUP|JOIN)$/i)) {
      // FROM of METADATA FROM 'key' belongs to the column definition
      assert.ok(has(t, 'keyword.other.sql.ssql') || has(t, 'keyword.other.metadata.ssql'), show(t));
    }
    for (const t of find(code, /^(INT|STRING|DOUBLE|TIMESTAMP|BIGINT)$/)) assert.ok(has(t, 'storage.type.sql.ssql'), show(t));
    for (const t of find(code, /^'(csv|parquet|files|json|kafka)'$/)) assert.fail(`a string split: ${t.text}`);
    for (const t of find(code, /^(csv|parquet|files)$/)) {
      if (has(t, 'string')) assert.ok(has(t, 'string.quoted.single.ssql'), show(t));
    }
  });
}

test('each construct has its scope', () => {
  const text = [
    "SET 'spark.sql.shuffle.partitions' = '4'; -- a comment",
    "CREATE STREAM IF NOT EXISTS s (a INT, ts TIMESTAMP, k STRING METADATA FROM 'key',",
    "  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) WITH (connector = 'kafka', servers = '${servers}', p = '${env:PASS}');",
    "/* block",
    "   comment */ CREATE SINK o WITH (connector = 'console');",
    "INSERT INTO o SELECT window_start, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' HOUR)",
    "GROUP BY window_start, window_end EMIT FINAL EVERY INTERVAL '10' SECONDS;",
    "SELECT `odd name`, 1.5, true FROM HOP(s, ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTES) EMIT CHANGES ONCE;",
  ].join('\n');
  const tokens = tokenize(grammar, text);
  const scopeOf = (needle, nth = 0) => {
    const found = tokens.filter((t) => t.text === needle);
    assert.ok(found.length > nth, `no token ${needle}`);
    return found[nth].scopes;
  };
  const expect = (needle, scope, nth = 0) => assert.ok(scopeOf(needle, nth).some((s) => s === scope),
    `${needle}: ${scopeOf(needle, nth).join(' ')} lacks ${scope}`);
  expect('SET', 'keyword.other.set.ssql');
  expect('-- a comment', 'comment.line.double-dash.ssql');
  expect('CREATE', 'keyword.other.create.ssql');
  expect('STREAM', 'storage.type.relation.ssql');
  expect('IF NOT EXISTS', 'keyword.other.create.ssql');
  expect('s', 'entity.name.type.relation.ssql');
  expect('METADATA', 'keyword.other.metadata.ssql');
  expect('WATERMARK', 'keyword.other.watermark.ssql');
  expect('${servers}', 'variable.other.substitution.ssql');
  expect('${servers}', 'string.quoted.single.ssql');
  expect('${env:PASS}', 'variable.other.substitution.ssql');
  expect('   comment ', 'comment.block.ssql');
  expect('SINK', 'storage.type.relation.ssql');
  expect('o', 'entity.name.type.relation.ssql');  // CREATE SINK o
  expect('o', 'entity.name.type.sink.ssql', 1);  // INSERT INTO o
  expect('TUMBLE', 'support.function.window-tvf.ssql');
  expect('HOP', 'support.function.window-tvf.ssql');
  expect('COUNT', 'support.function.ssql');
  expect('EMIT', 'keyword.control.emit.ssql');
  expect('FINAL', 'keyword.control.emit.ssql');
  expect('EVERY', 'keyword.control.emit.ssql');
  expect('CHANGES', 'keyword.control.emit.ssql');
  expect('ONCE', 'keyword.control.emit.ssql');
  expect('INTERVAL', 'keyword.other.sql.ssql');
  expect('`odd name`', 'variable.other.quoted.ssql');
  expect('1.5', 'constant.numeric.ssql');
  expect('true', 'constant.language.ssql');
  expect('INT', 'storage.type.sql.ssql');
});
