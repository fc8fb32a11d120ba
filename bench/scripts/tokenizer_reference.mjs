// The reference side of bench/scripts/tokenizer-bench.sh: Hugging Face's Rust tokenizers (npm
// `tokenizers`, N-API) encoding the same corpus as lanes-tokenizer-bench, one call at a time,
// add_special_tokens false, warm-up pass first, then rounds until both --seconds and --min-rounds
// are reached. Prints the same JSON line as lanes-tokenizer-bench, plus the N-API crossing's
// share of the timed wall time, in two parts: the per-call cost of going from JavaScript to Rust
// and back (as many calls on a one-character string, timed: napi_call_share) and the ids'
// conversion into a JavaScript array (getIds(), timed in the loop: ids_share).
// Run it pinned with RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false.
//   node tokenizer_reference.mjs TOOLS_DIR TOKENIZER_JSON CORPUS_JSON [--name N] [--seconds S]
//       [--min-rounds R] [--expect-tokens T]
// TOOLS_DIR holds node_modules/tokenizers (scripts/npm-tools.sh installs it).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

function parseArgs(argv) {
    const [tools, tokenizerPath, corpusPath, ...rest] = argv;
    if (!tools || !tokenizerPath || !corpusPath) {
        console.error(
            'usage: node tokenizer_reference.mjs TOOLS_DIR TOKENIZER_JSON CORPUS_JSON ' +
                '[--name N] [--seconds S] [--min-rounds R] [--expect-tokens T]',
        );
        process.exit(2);
    }
    const opts = { tools, tokenizerPath, corpusPath, name: tokenizerPath, seconds: 10, minRounds: 2 };
    for (let i = 0; i < rest.length; i += 2) {
        const [flag, value] = [rest[i], rest[i + 1]];
        if (flag === '--name') opts.name = value;
        else if (flag === '--seconds') opts.seconds = Number(value);
        else if (flag === '--min-rounds') opts.minRounds = Number(value);
        else if (flag === '--expect-tokens') opts.expectTokens = Number(value);
        else {
            console.error(`tokenizer_reference: unknown flag ${flag}`);
            process.exit(2);
        }
    }
    return opts;
}

const now = () => Number(process.hrtime.bigint()) / 1e9;

function rss() {
    if (global.gc) global.gc();
    return process.memoryUsage().rss;
}

// One pass: the tokens of every text, encoded one call at a time, and the seconds spent in
// getIds().
async function encodeAll(tokenizer, texts) {
    let tokens = 0;
    let idsS = 0;
    for (const text of texts) {
        const encoding = await tokenizer.encode(text, null, { addSpecialTokens: false });
        const idsStart = now();
        tokens += encoding.getIds().length;
        idsS += now() - idsStart;
    }
    return { tokens, idsS };
}

async function main() {
    const opts = parseArgs(process.argv.slice(2));
    const require = createRequire(join(resolve(opts.tools), 'package.json'));
    const { Tokenizer } = require('tokenizers');
    const docs = JSON.parse(readFileSync(opts.corpusPath, 'utf8'));
    const corpusBytes = docs.reduce((n, d) => n + Buffer.byteLength(d, 'utf8'), 0);

    const rssBefore = rss();
    const loadStart = now();
    const tokenizer = Tokenizer.fromFile(opts.tokenizerPath);
    const loadS = now() - loadStart;
    const rssDelta = rss() - rssBefore;

    const warmStart = now();
    const { tokens } = await encodeAll(tokenizer, docs);
    const warmS = now() - warmStart;

    let rounds = 0;
    let agree = true;
    let idsS = 0;
    const start = now();
    let elapsed = 0;
    while (rounds < opts.minRounds || elapsed < opts.seconds) {
        const pass = await encodeAll(tokenizer, docs);
        agree = agree && pass.tokens === tokens;
        idsS += pass.idsS;
        rounds += 1;
        elapsed = now() - start;
    }

    // The crossing alone: the same number of calls on a one-character text.
    const calls = rounds * docs.length;
    const tiny = new Array(docs.length).fill('a');
    await encodeAll(tokenizer, tiny);
    const crossStart = now();
    for (let r = 0; r < rounds; r++) await encodeAll(tokenizer, tiny);
    const crossS = now() - crossStart;

    const line = {
        side: 'reference',
        name: opts.name,
        vocab_size: tokenizer.getVocabSize(true),
        load_s: loadS,
        rss_delta_bytes: rssDelta,
        documents: docs.length,
        corpus_bytes: corpusBytes,
        tokens,
        warmup_s: warmS,
        rounds,
        seconds: elapsed,
        bytes_per_s: (corpusBytes * rounds) / elapsed,
        tokens_per_s: (tokens * rounds) / elapsed,
        rounds_agree: agree,
        napi_call_s: crossS / calls,
        napi_call_share: crossS / elapsed,
        ids_share: idsS / elapsed,
        napi_share: (crossS + idsS) / elapsed,
    };
    console.log(JSON.stringify(line));
    if (opts.expectTokens !== undefined && opts.expectTokens !== tokens) {
        console.error(
            `tokenizer_reference: ${opts.name}: TOKEN COUNT MISMATCH: reference ${tokens}, ` +
                `lanes ${opts.expectTokens}: the two sides did not do the same work`,
        );
        process.exit(1);
    }
}

await main();
