#!/usr/bin/env python3
"""The model loader's parity through the HTTP API: starts lanes-replica on each checkpoint
directory given (cpu backend, loopback, a free port) and checks its OpenAI-compatible answers
against the numpy reference (reference.py, imported):
  - GET /v1/models lists the --model argument as given (vLLM's default served name), and with
    --served-model-name (a second run) the alias instead, which responses then name and under
    which the directory's path is no longer served (404);
  - greedy completions of two prompts (temperature 0, ignore_eos, 8 tokens): the prompt ids from
    POST /tokenize (as many as the response's usage counts), the reference's greedy continuation
    of them, and the replica's text equal to POST /detokenize of the reference's ids; steps are
    compared up to the first where the reference's top-two logit gap is below compare.py's
    tolerance (reported);
  - the same with logprobs=5: each token's string and log-probability against the reference's
    float64 log-softmax of the logits row that predicted it, the alternatives against the
    reference's top 5, text_offset against the token strings (vLLM's shape);
  - a streamed completion (stream: true) gives the whole one's text and logprob tokens;
  - a greedy chat completion over a system and a user message, its prompt ids from POST /tokenize
    with messages and add_generation_prompt, with logprobs / top_logprobs in vLLM's chat shape.
A server that answers 400 to logprobs (the feature not there) is checked without them and the
line says "logprobs: skipped (server refuses)"; logprobs returned and wrong fail.
One line per check on stdout, failures as "FAIL ..." on stderr; the last line is
"api parity: N checks, M failures". Exit 0, 1 on any failure, 77 without numpy.
    tests/models/api_parity.py --replica BUILD/replica/lanes-replica DIR... [--summary FILE]

Tolerances. Log-probabilities: 1e-4 absolute. The C++ forward pass is fp32 and its logits agree
with the reference to ~5e-6 on these checkpoints (compare.py's figures, which allow 1e-3); a
log-probability is z_i - logsumexp(z), so its error is at most twice the largest logit error,
~1e-5, and the KV-cached decode steps add ~1e-6 (lanes_model_parity's prefill-vs-decode figure).
1e-4 leaves a 10x margin and still catches a logsumexp over the wrong row, a temperature applied
to the logprobs, a padded-vocabulary mask or fp16/bf16 logits (~1e-3..1e-2). The top-5 sets:
an id is required when its reference log-probability is clearly inside the top 5 (above the 6th
by more than twice the tolerance), allowed when within twice the tolerance of the 5th.
Greedy: compare.py's default gap tolerance, 2 * (1e-3 + 1e-4 * the widest logit range)."""
import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:
    import numpy as np
except ImportError:
    print("api_parity.py: no numpy: skipped", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402  pylint: disable=wrong-import-position

# compare.py's defaults: the logit tolerance the greedy gap tolerance is made of.
LOGIT_ATOL, LOGIT_RTOL = 1e-3, 1e-4
LOGPROB_ATOL = 1e-4
GREEDY = 8
TOP = 5
STARTUP_S = 30.0
REQUEST_S = 60.0
PROMPTS = ["Hello world",
           "The router sends each prompt to the replica that already holds its prefix"]
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
ALIAS = "parity-alias"
# Loopback only, and never through a proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
FFFD = "\ufffd"


class CheckFailed(Exception):
    pass


def set_parent_death_signal():
    """Linux: SIGTERM when the parent exits, so that nothing outlives a killed caller."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# --- the tokenizer, read here from tokenizer.json (byte-level BPE), for per-token strings ------

def byte_alphabet():
    """GPT-2's byte-level alphabet: {char: byte}."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[chr(b)] = b
        else:
            table[chr(256 + extra)] = b
            extra += 1
    return table


class Tokenizer:
    """Each id's bytes and whether it is special, from DIR/tokenizer.json."""

    def __init__(self, directory):
        with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
            tok = json.load(f)
        if tok.get("decoder", {}).get("type") != "ByteLevel":
            raise CheckFailed("api_parity.py reads byte-level BPE tokenizers only")
        alphabet = byte_alphabet()
        self.bytes, self.special = {}, set()
        for piece, i in tok["model"]["vocab"].items():
            self.bytes[i] = bytes(alphabet[c] for c in piece)
        for t in tok.get("added_tokens", []):
            self.bytes[t["id"]] = t["content"].encode("utf-8")
            if t.get("special"):
                self.special.add(t["id"])

    def token(self, i):
        """One id alone as vLLM shows it in logprobs: its bytes as UTF-8, an incomplete or
        invalid sequence replaced by U+FFFD (Rust's from_utf8_lossy and Python's "replace" both
        follow Unicode's maximal-subpart practice); an id past the tokenizer (a padded embedding
        row) is empty."""
        return self.bytes.get(i, b"").decode("utf-8", "replace")

    def shown(self, ids):
        """The ids whose text a response shows: special ones are skipped (vLLM's
        skip_special_tokens default), and so are ids past the tokenizer, which Hugging Face's
        decode drops."""
        return [i for i in ids if i in self.bytes and i not in self.special]


# --- the replica -----------------------------------------------------------------------------

class Replica:
    """lanes-replica on 127.0.0.1 and a free port; stop() always kills it."""

    def __init__(self, binary, model, extra=()):
        self.log = None
        self.cmd = [binary, "--model", model, "--backend", "cpu", "--host", "127.0.0.1",
                    "--port", "0", "--kv-cache-mb", "16", "--max-model-len", "512",
                    "--log-level", "info", *extra]
        self.proc = None
        self.base = None

    def start(self):
        t0 = time.monotonic()
        self.log = tempfile.NamedTemporaryFile(prefix="api-parity-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, preexec_fn=set_parent_death_signal)
        deadline = t0 + STARTUP_S
        while self.base is None:
            if self.proc.poll() is not None:
                raise CheckFailed(f"lanes-replica exited {self.proc.returncode} before listening:"
                                  f"\n{self.log_text()}")
            m = re.search(r"listening on http://(127\.0\.0\.1:\d+)", self.log_text())
            if m:
                self.base = "http://" + m.group(1)
            elif time.monotonic() > deadline:
                raise CheckFailed(f"no 'listening on' line in {STARTUP_S:g} s:\n{self.log_text()}")
            else:
                time.sleep(0.02)
        while True:  # listening is logged once bound; /health says it serves
            try:
                if self.get("/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise CheckFailed(f"GET /health not 200 in {STARTUP_S:g} s:\n{self.log_text()}")
            time.sleep(0.05)
        return time.monotonic() - t0

    def log_text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if self.log is not None:
                self.log.close()
                try:
                    os.unlink(self.log.name)
                except FileNotFoundError:
                    pass

    def request(self, method, path, body=None):
        """(status, body bytes)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with OPENER.open(req, timeout=REQUEST_S) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)

    def json(self, path, body=None, method="POST"):
        """The JSON of a 200 answer; anything else fails the check."""
        status, raw = self.request(method, path, body)
        if status != 200:
            raise CheckFailed(f"{method} {path} {json.dumps(body)} -> {status}: "
                              f"{raw[:500].decode(errors='replace')}")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise CheckFailed(f"{method} {path}: not JSON ({e}): {raw[:300]!r}") from e

    def stream(self, path, body):
        """The data objects of an SSE answer, up to [DONE]."""
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        events, done = [], False
        try:
            with OPENER.open(req, timeout=REQUEST_S) as res:
                ctype = res.headers.get("Content-Type", "")
                if not ctype.startswith("text/event-stream"):
                    raise CheckFailed(f"stream: Content-Type {ctype!r}, want text/event-stream")
                for line in res:
                    line = line.decode("utf-8").rstrip("\r\n")
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    events.append(json.loads(data))
        except urllib.error.HTTPError as e:
            raise CheckFailed(f"POST {path} (stream) -> {e.code}: "
                              f"{e.read()[:500].decode(errors='replace')}") from e
        if not done:
            raise CheckFailed("stream: no data: [DONE]")
        return events


# --- the reference ---------------------------------------------------------------------------

class Expected:
    """The reference's greedy continuation of `prompt`, the float64 log-softmax of each logits row
    that predicted a greedy id, and how many steps the top-two gaps let be compared."""

    def __init__(self, model, directory, prompt):
        ref = reference.run(directory, prompt, GREEDY)
        self.ids, gaps = ref["greedy"], ref["top2_gap"]
        # One pass over prompt + continuation: row len(prompt) - 1 + i predicted ids[i].
        logits = model.forward(list(prompt) + self.ids)
        span = float((logits.max(axis=1) - logits.min(axis=1)).max())
        self.gap_tol = 2 * (LOGIT_ATOL + LOGIT_RTOL * span)
        rows = logits[len(prompt) - 1:len(prompt) - 1 + GREEDY]
        if [int(np.argmax(r)) for r in rows] != self.ids:
            raise CheckFailed("reference: the one-pass argmax differs from reference.run's greedy")
        self.logprobs = rows - (rows.max(axis=1, keepdims=True) + np.log(
            np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)))
        self.steps = GREEDY
        self.gap = None
        for step, g in enumerate(gaps):
            if g < self.gap_tol:
                self.steps, self.gap = step, g
                break

    def greedy_note(self):
        if self.gap is None:
            return f"greedy agree for all {GREEDY} steps"
        return (f"greedy compared up to step {self.steps}, where the reference's top-two gap "
                f"{self.gap:.3g} < tol {self.gap_tol:.3g}")


def check_text(replica, model_name, tok, exp, text):
    """The replica's text against /detokenize of the reference's ids (those a response shows)."""
    ids = exp.ids[:exp.steps]
    want = replica.json("/detokenize", {"model": model_name, "tokens": tok.shown(ids)})["prompt"]
    if exp.steps == GREEDY:
        if text != want:
            raise CheckFailed(f"text {text!r}, /detokenize of the reference's greedy ids "
                              f"{exp.ids} is {want!r}")
    else:
        # A prefix: a partial UTF-8 sequence at its end may be completed by the next token.
        prefix = want.rstrip(FFFD)
        if not text.startswith(prefix):
            raise CheckFailed(f"text {text!r} does not start with {prefix!r}, "
                              f"/detokenize of the reference's first {exp.steps} ids {ids}")
        return (f"{text!r} starts with {prefix!r}, /detokenize of the reference's first "
                f"{exp.steps} ids {ids}")
    return f"{text!r} = /detokenize of the reference's ids {ids}"


def match_alternatives(tok, exp, step, alts):
    """alts: [(token string, logprob)] a response lists for one position. Each must be an id of the
    reference's top ones with that string and that log-probability (each id used once), and every
    id clearly inside the top 5 must be there. Returns the largest difference."""
    lp = exp.logprobs[step]
    order = np.argsort(-lp, kind="stable")
    fifth, sixth = lp[order[TOP - 1]], lp[order[TOP]]
    allowed = [int(i) for i in order if lp[i] >= fifth - 2 * LOGPROB_ATOL]
    required = [int(i) for i in order[:TOP] if lp[i] > sixth + 2 * LOGPROB_ATOL]
    used, worst = set(), 0.0
    for s, v in alts:
        cands = [i for i in allowed if i not in used and tok.token(i) == s]
        if not cands:
            raise CheckFailed(f"step {step}: alternative {s!r} ({v:.6g}) is not among the "
                              f"reference's top {TOP}: " + top_text(tok, lp, order))
        best = min(cands, key=lambda i: abs(lp[i] - v))
        d = abs(lp[best] - v)
        if d > LOGPROB_ATOL:
            raise CheckFailed(f"step {step}: alternative {s!r} has logprob {v:.9g}, the "
                              f"reference {lp[best]:.9g} (id {best}), diff {d:.3g} > "
                              f"{LOGPROB_ATOL:g}")
        used.add(best)
        worst = max(worst, d)
    # A string shown for two ids is one key of a completions dict: a required id is present when
    # its string is.
    shown = {s for s, _ in alts}
    missing = [i for i in required if i not in used and tok.token(i) not in shown]
    if missing:
        raise CheckFailed(f"step {step}: the reference's top {TOP} ids {missing} "
                          f"({[tok.token(i) for i in missing]}) are missing from {alts}")
    return worst


def top_text(tok, lp, order):
    return ", ".join(f"{int(i)} {tok.token(int(i))!r} {lp[i]:.6g}" for i in order[:TOP + 1])


def check_chosen(tok, exp, step, s, v):
    want = exp.ids[step]
    if s != tok.token(want):
        raise CheckFailed(f"step {step}: token {s!r}, the reference's greedy id {want} "
                          f"is {tok.token(want)!r}")
    d = abs(exp.logprobs[step][want] - v)
    if d > LOGPROB_ATOL:
        raise CheckFailed(f"step {step}: token {s!r} logprob {v:.9g}, the reference's "
                          f"{exp.logprobs[step][want]:.9g}, diff {d:.3g} > {LOGPROB_ATOL:g}")
    return d


def check_completion_logprobs(tok, exp, lp):
    """choices[0].logprobs of a completion: {tokens, token_logprobs, top_logprobs, text_offset}."""
    keys = {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
    if not isinstance(lp, dict) or set(lp) != keys:
        raise CheckFailed(f"logprobs {json.dumps(lp)[:300]}: want an object with exactly "
                          f"{sorted(keys)}")
    n = len(lp["tokens"])
    if n != GREEDY or any(len(lp[k]) != n for k in keys):
        raise CheckFailed(f"logprobs lists of lengths "
                          f"{ {k: len(lp[k]) for k in sorted(keys)} }, want {GREEDY} each")
    offset = 0
    for i, s in enumerate(lp["tokens"]):
        if lp["text_offset"][i] != offset:
            raise CheckFailed(f"text_offset {lp['text_offset']}, want the running sum "
                              f"of the tokens' lengths (vLLM): {i} -> {offset}")
        offset += len(s)
    worst = 0.0
    for step in range(exp.steps):
        s, v = lp["tokens"][step], lp["token_logprobs"][step]
        worst = max(worst, check_chosen(tok, exp, step, s, v))
        top = lp["top_logprobs"][step]
        if not isinstance(top, dict) or len(top) > TOP + 1:
            raise CheckFailed(f"step {step}: top_logprobs {top}: want a dict of at most "
                              f"{TOP + 1} (the chosen token and the top {TOP})")
        if top.get(s) is None:
            raise CheckFailed(f"step {step}: the chosen token {s!r} not in top_logprobs")
        worst = max(worst, match_alternatives(tok, exp, step, list(top.items())))
    return worst


def check_chat_logprobs(tok, exp, lp):
    """choices[0].logprobs of a chat completion: {content: [{token, logprob, bytes,
    top_logprobs: [{token, logprob, bytes}]}]}."""
    if not isinstance(lp, dict) or set(lp) - {"refusal"} != {"content"} or \
            not isinstance(lp["content"], list) or len(lp["content"]) != GREEDY:
        raise CheckFailed(f"logprobs {json.dumps(lp)[:300]}: want "
                          f"{{\"content\": [{GREEDY} entries]}}")
    worst = 0.0
    for step, e in enumerate(lp["content"]):
        entries = [e] + list(e.get("top_logprobs") or [])
        for x in entries:
            if not {"token", "logprob", "bytes"} <= set(x) or \
                    x["bytes"] != list(x["token"].encode("utf-8")):
                raise CheckFailed(f"step {step}: entry {x}: want token, logprob and "
                                  "bytes, the token's UTF-8")
        if step >= exp.steps:
            continue
        worst = max(worst, check_chosen(tok, exp, step, e["token"], e["logprob"]))
        top = [(x["token"], x["logprob"]) for x in e["top_logprobs"]]
        if len(top) != TOP:
            raise CheckFailed(f"step {step}: {len(top)} top_logprobs, asked {TOP}")
        worst = max(worst, match_alternatives(tok, exp, step, top))
    return worst


# --- the checks ------------------------------------------------------------------------------

class Run:
    def __init__(self):
        self.checks = 0
        self.failures = 0

    def check(self, label, fn):
        self.checks += 1
        try:
            note = fn()
        except CheckFailed as e:
            self.failures += 1
            print(f"FAIL {label}: {e}", file=sys.stderr, flush=True)
            return False
        except (OSError, ValueError, LookupError, TypeError, AttributeError) as e:
            # A refused connection, a timeout, a body not JSON or not of the expected shape.
            self.failures += 1
            print(f"FAIL {label}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            return False
        print(f"{label}: {note}", flush=True)
        return True


def with_logprobs(replica, path, body, extra):
    """(response, True) with logprobs asked; (response without them, False) when the server
    answers 400 to them."""
    status, raw = replica.post(path, {**body, **extra})
    if status == 400:
        return replica.json(path, body), False
    if status != 200:
        raise CheckFailed(f"POST {path} {json.dumps({**body, **extra})} -> {status}: "
                          f"{raw[:500].decode(errors='replace')}")
    return json.loads(raw), True


def choice_of(resp, name):
    if resp.get("model") != name:
        raise CheckFailed(f"\"model\" is {resp.get('model')!r}, want {name!r}")
    choices = resp.get("choices") or []
    if len(choices) != 1:
        raise CheckFailed(f"{len(choices)} choices")
    c = choices[0]
    if c.get("finish_reason") != "length":
        raise CheckFailed(f"finish_reason {c.get('finish_reason')!r}, want 'length' "
                          f"(max_tokens {GREEDY}, ignore_eos)")
    if (resp.get("usage") or {}).get("completion_tokens") != GREEDY:
        raise CheckFailed(f"usage {resp.get('usage')}, want {GREEDY} completion tokens")
    return c


def variant_checks(run, binary, directory, state):
    variant = os.path.basename(directory.rstrip("/"))
    tag = f"api {variant}"
    tok = Tokenizer(directory)
    model = reference.Model(directory)
    replica = Replica(binary, directory)
    try:
        def start():
            took = replica.start()
            return f"--port 0: listening at {replica.base}, /health 200 after {took:.2f} s"
        if not run.check(f"{tag}: start", start):
            return
        name = directory

        def models():
            data = replica.json("/v1/models", method="GET").get("data") or []
            ids = [m.get("id") for m in data]
            if ids != [name]:
                raise CheckFailed(f"/v1/models lists {ids}, want [{name!r}] (the --model argument)")
            return f"/v1/models lists {name!r}, the --model argument as given"
        run.check(f"{tag}: models", models)

        for n, text in enumerate(PROMPTS):
            body = {"model": name, "prompt": text, "max_tokens": GREEDY, "temperature": 0,
                    "ignore_eos": True}
            what = f"{tag}: completion {n}"

            def completion(body=body, text=text):
                prompt = replica.json("/tokenize", {"model": name, "prompt": text})
                ids = prompt.get("tokens")
                if not ids or prompt.get("count") != len(ids):
                    raise CheckFailed(f"/tokenize {text!r} -> {prompt}")
                exp = Expected(model, directory, ids)
                resp, has = with_logprobs(replica, "/v1/completions", body, {"logprobs": TOP})
                c = choice_of(resp, name)
                if resp["usage"].get("prompt_tokens") != len(ids):
                    raise CheckFailed(f"usage.prompt_tokens {resp['usage'].get('prompt_tokens')}, "
                                      f"/tokenize counted {len(ids)}")
                same = check_text(replica, name, tok, exp, c.get("text"))
                note = f"{text!r} ({len(ids)} prompt ids): {exp.greedy_note()}; text {same}"
                if not has:
                    state["skipped"] += 1
                    return note + "; logprobs: skipped (server refuses)"
                worst = check_completion_logprobs(tok, exp, c.get("logprobs"))
                state["worst"] = max(state["worst"], worst)
                state["steps"].append(exp.steps)
                return note + (f"; logprobs: {exp.steps} tokens and top-{TOP} sets agree, max "
                               f"|logprob - reference| {worst:.3g} (tol {LOGPROB_ATOL:g})")
            run.check(what, completion)

        def stream():
            text = PROMPTS[0]
            body = {"model": name, "prompt": text, "max_tokens": GREEDY, "temperature": 0,
                    "ignore_eos": True}
            whole = replica.json("/v1/completions", body)["choices"][0]["text"]
            _, has = with_logprobs(replica, "/v1/completions", body, {"logprobs": TOP})
            if has:
                body = {**body, "logprobs": TOP}
            events = replica.stream("/v1/completions", {**body, "stream": True})
            pieces, tokens, finish = [], [], None
            for ev in events:
                for ch in ev.get("choices") or []:
                    pieces.append(ch.get("text", ""))
                    if ch.get("logprobs"):
                        tokens += ch["logprobs"].get("tokens", [])
                    finish = ch.get("finish_reason") or finish
            got = "".join(pieces)
            if got != whole:
                raise CheckFailed(f"streamed text {got!r}, the whole completion's {whole!r}")
            if finish != "length":
                raise CheckFailed(f"streamed finish_reason {finish!r}, want 'length'")
            note = f"{len(events)} chunks, the same text {got!r} as the whole completion"
            if has:
                want = replica.json("/v1/completions", body)["choices"][0]["logprobs"]["tokens"]
                if tokens != want:
                    raise CheckFailed(f"streamed logprob tokens {tokens}, whole {want}")
                note += f" and the same {len(tokens)} logprob tokens"
            return note
        run.check(f"{tag}: stream", stream)

        def chat():
            prompt = replica.json("/tokenize", {"model": name, "messages": CHAT,
                                                "add_generation_prompt": True})
            ids = prompt.get("tokens")
            if not ids or prompt.get("count") != len(ids):
                raise CheckFailed(f"/tokenize messages -> {prompt}")
            exp = Expected(model, directory, ids)
            body = {"model": name, "messages": CHAT, "max_tokens": GREEDY, "temperature": 0,
                    "ignore_eos": True}
            resp, has = with_logprobs(replica, "/v1/chat/completions", body,
                                      {"logprobs": True, "top_logprobs": TOP})
            c = choice_of(resp, name)
            msg = c.get("message") or {}
            if msg.get("role") != "assistant":
                raise CheckFailed(f"message {msg}: want role 'assistant'")
            if resp["usage"].get("prompt_tokens") != len(ids):
                raise CheckFailed(f"usage.prompt_tokens {resp['usage'].get('prompt_tokens')}, "
                                  f"/tokenize with messages counted {len(ids)}")
            same = check_text(replica, name, tok, exp, msg.get("content"))
            note = f"system + user ({len(ids)} prompt ids): {exp.greedy_note()}; content {same}"
            if not has:
                state["skipped"] += 1
                return note + "; logprobs: skipped (server refuses)"
            worst = check_chat_logprobs(tok, exp, c.get("logprobs"))
            state["worst"] = max(state["worst"], worst)
            state["steps"].append(exp.steps)
            return note + (f"; logprobs: {exp.steps} tokens and top-{TOP} lists agree, max "
                           f"|logprob - reference| {worst:.3g}")
        run.check(f"{tag}: chat", chat)
    finally:
        replica.stop()

    aliased = Replica(binary, directory, ["--served-model-name", ALIAS])
    try:
        def alias():
            aliased.start()
            ids = [m.get("id") for m in aliased.json("/v1/models", method="GET").get("data", [])]
            if ids != [ALIAS]:
                raise CheckFailed(f"with --served-model-name {ALIAS}: /v1/models lists {ids}")
            body = {"model": ALIAS, "prompt": PROMPTS[0], "max_tokens": GREEDY,
                    "temperature": 0, "ignore_eos": True}
            choice_of(aliased.json("/v1/completions", body), ALIAS)
            status, raw = aliased.post("/v1/completions", {**body, "model": directory})
            if status != 404:
                raise CheckFailed(f"model {directory!r} (not served under an alias) -> {status}, "
                                  f"want 404 as vLLM: {raw[:300].decode(errors='replace')}")
            return (f"/v1/models lists {ALIAS!r}, completions name it, the directory's path "
                    "answers 404")
        run.check(f"{tag}: --served-model-name", alias)
    finally:
        aliased.stop()


def on_sigterm(*_):
    """Unwinds like an exception, once: a second SIGTERM must not cut the clean-up short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(143)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--replica", required=True, help="the lanes-replica binary")
    ap.add_argument("dirs", nargs="+", help="checkpoint directories (with tokenizer files)")
    ap.add_argument("--summary", help="write 'CHECKS FAILURES' here")
    args = ap.parse_args()
    set_parent_death_signal()
    # SIGTERM unwinds like an exception, so that every replica started is killed.
    signal.signal(signal.SIGTERM, on_sigterm)
    run = Run()
    state = {"worst": 0.0, "steps": [], "skipped": 0}
    try:
        for d in args.dirs:
            try:
                variant_checks(run, args.replica, d, state)
            except (CheckFailed, reference.CheckpointError, OSError, ValueError) as e:
                run.checks += 1
                run.failures += 1
                print(f"FAIL api {os.path.basename(d.rstrip('/'))}: {e}", file=sys.stderr)
    finally:
        if args.summary:
            with open(args.summary, "w", encoding="utf-8") as f:
                f.write(f"{run.checks} {run.failures}\n")
    compared = state["steps"]
    figures = ""
    if compared:
        figures = (f"; logprobs of {sum(compared)} greedy steps, max |logprob - reference| "
                   f"{state['worst']:.3g}")
    if state["skipped"]:
        figures += f"; logprobs skipped {state['skipped']} times (server refuses)"
    print(f"api parity: {run.checks} checks, {run.failures} failures{figures}")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
