// Adds to chat_oracle.py's file the ids Hugging Face's tokenizers (npm `tokenizers`) give each
// expected chat text with add_special_tokens false, as vLLM encodes a rendered chat.
//   node chat_oracle.mjs CHATS_JSON
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, 'package.json'));
const { Tokenizer } = require('tokenizers');

const [path] = process.argv.slice(2);
if (!path) {
    console.error('usage: node chat_oracle.mjs CHATS_JSON');
    process.exit(2);
}
const doc = JSON.parse(readFileSync(path, 'utf8'));
for (const model of doc.models) {
    const tokenizer = Tokenizer.fromFile(join(model.directory, 'tokenizer.json'));
    for (const chat of model.chats) {
        if (typeof chat.text === 'string') {
            chat.ids = (await tokenizer.encode(chat.text, null, { addSpecialTokens: false })).getIds();
        }
    }
}
writeFileSync(path, JSON.stringify(doc));
