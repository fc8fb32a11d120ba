#!/usr/bin/env python3
"""The reference for a whole chat request in a model's tokens: messages prepared as vLLM's
chat_utils prepares them (role and content, text parts joined with a newline unless the
template iterates over content parts, tool calls with object arguments, reasoning, tool_call_id,
name), the context transformers builds (the tokenizer's special tokens, then the request's
kwargs), rendered by python3-jinja2 in the transformers environment (render_templates.py's).
Writes, per real model and conversation, the request and the expected text, or the template's
raise_exception message; chat_oracle.mjs then adds Hugging Face tokenizers' ids of that text.

  chat_oracle.py MODELS_DIR CONVERSATIONS OUT --now EPOCH_SECONDS [--random N --seed S]
"""
import argparse
import copy
import json
import os
import sys

import jinja2
import jinja2.nodes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render_templates  # noqa: E402  (the transformers environment, the random conversations)

SPECIAL_TOKENS = ["bos_token", "eos_token", "unk_token", "pad_token"]


def iterates_content(env, source):
    """vLLM's content-format detection: does the template loop over a message's content?"""
    for loop in env.parse(source).find_all(jinja2.nodes.For):
        it = loop.iter
        if isinstance(it, jinja2.nodes.Getitem) and isinstance(it.arg, jinja2.nodes.Const) \
                and it.arg.value == "content":
            return True
        if isinstance(it, jinja2.nodes.Getattr) and it.attr == "content":
            return True
    return False


def prepare(messages, as_parts):
    out = []
    for m in messages:
        role = m["role"]
        content = m.get("content")
        parts = [] if content is None else [content] if isinstance(content, str) else content
        texts = []
        for p in parts:
            if isinstance(p, str):
                texts.append(p)
            elif p.get("text") is not None:
                texts.append(p["text"])
        p = {"role": role,
             "content": [{"type": "text", "text": t} for t in texts] if as_parts
             else "\n".join(texts)}
        if role == "assistant":
            if m.get("tool_calls") is not None:
                p["tool_calls"] = copy.deepcopy(m["tool_calls"])
            reasoning = m.get("reasoning")
            if reasoning is None:
                reasoning = m.get("reasoning_content")
            if reasoning is not None:
                p["reasoning"] = reasoning
                p["reasoning_content"] = reasoning
        elif role == "tool" and "tool_call_id" in m:
            p["tool_call_id"] = m["tool_call_id"]
        if isinstance(m.get("name"), str):
            p["name"] = m["name"]
        if role == "developer":
            p["tools"] = m.get("tools")
        calls = p.get("tool_calls")
        if isinstance(calls, list) and not calls:
            del p["tool_calls"]
        elif isinstance(calls, list):
            for c in calls:
                args = c["function"].get("arguments")
                if not args:
                    c["function"]["arguments"] = {}
                elif not isinstance(args, (dict, list)):
                    c["function"]["arguments"] = json.loads(args)
        out.append(p)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models_dir")
    parser.add_argument("conversations")
    parser.add_argument("out")
    parser.add_argument("--now", type=int, required=True)
    parser.add_argument("--random", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    env = render_templates.environment(args.now)
    with open(args.conversations, encoding="utf-8") as f:
        cases = json.load(f)["cases"] + render_templates.random_cases(args.random, args.seed)
    result = {"now": args.now, "models": []}
    for model in render_templates.MODELS:
        models_dir = os.path.join(args.models_dir, f"tokenizer-{model}", "models")
        with open(os.path.join(models_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        source = config["chat_template"]
        if isinstance(source, list):
            source = next(t["template"] for t in source if t["name"] == "default")
        template = env.from_string(source)
        as_parts = iterates_content(env, source)
        chats = []
        for case in cases:
            request = {"messages": case["messages"],
                       "add_generation_prompt": case["add_generation_prompt"]}
            if "tools" in case:
                request["tools"] = case["tools"]
            if "kwargs" in case:
                request["chat_template_kwargs"] = case["kwargs"]
            context = {"messages": prepare(case["messages"], as_parts)}
            if "tools" in case:
                context["tools"] = case["tools"]
            context["add_generation_prompt"] = case["add_generation_prompt"]
            for name in SPECIAL_TOKENS:
                token = render_templates.token_text(config.get(name))
                if token is not None:
                    context[name] = token
            context.update(case.get("kwargs", {}))
            entry = {"case": case["name"], "request": request}
            try:
                entry["text"] = template.render(**context)
            except render_templates.Raised as e:
                entry["raised"] = str(e)
            except Exception as e:  # the template fails on this input: lanes must refuse it too
                entry["error"] = f"{type(e).__name__}: {e}"
            chats.append(entry)
        result["models"].append({"model": model, "directory": models_dir,
                                 "content_as_parts": as_parts, "chats": chats})
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
