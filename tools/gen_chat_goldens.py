#!/usr/bin/env python3
# tools/gen_chat_goldens.py — renders every chat template with Python's jinja2, set up the way Hugging Face
# transformers renders them, and writes tests/data/chat/goldens.json for test_chat_template. Dev tool only:
# the test suite reads the committed JSON and never needs jinja2.
#
#   pip install jinja2
#   python3 tools/gen_chat_goldens.py [--templates ../shared/models/chat_templates] [--out tests/data/chat/goldens.json]
#
# The built-in templates are read from engine/chat/builtin_templates.cpp, so their goldens check our
# interpreter against jinja2 on our own sources too.
import argparse
import datetime
import json
import os
import re
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2024, 9, 3, 14, 5, 9)


class RaisedByTemplate(Exception):
    pass


def make_environment():
    # As transformers does: immutable sandbox, trim/lstrip blocks, loop controls, its own tojson
    # (no HTML escaping, keys in insertion order), raise_exception and strftime_now.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise RaisedByTemplate(message)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to search for"},
            "max_results": {"type": "integer", "description": "How many results", "default": 5, "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Filter tags"}},
            "required": ["query"]}}},
]

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
               "content": "{\"temperature\": 21, \"unit\": \"celsius\"}"}

CONVERSATIONS = {
    "user_only": [{"role": "user", "content": "Hello! How are you?"}],
    "system_user": [SYSTEM, {"role": "user", "content": "What is 2+2?"}],
    "multi_turn": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."}],
    "system_multi_turn": [
        SYSTEM,
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."}],
    "special_chars": [{"role": "user",
                       "content": "  Tell me about <html> & \"quotes\" and 'apostrophes' \u2014 \u00fcn\u00efc\u00f6d\u00e9 \U0001F680\n\n"}],
    "thinking": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nLet me add.\n</think>\n\nThe answer is 4."},
        {"role": "user", "content": "And 3+3?"}],
    "tools": [SYSTEM, {"role": "user", "content": "What's the weather in Paris?"}],
    "tool_calls_dict": [
        SYSTEM,
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        TOOL_RESULT],
    "tool_calls_str": [
        SYSTEM,
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call12345", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        TOOL_RESULT],
    "extra_vars": [SYSTEM, {"role": "user", "content": "What is 2+2?"}],
    "empty": [],
}

EXTRA = {
    "tools": {"tools": TOOLS},
    "tool_calls_dict": {"tools": TOOLS},
    "tool_calls_str": {"tools": TOOLS},
    "extra_vars": {"functions": json.dumps([t["function"] for t in TOOLS]), "datetime": "2024-09-03",
                   "date_string": "03 Sep 2024", "enable_thinking": False, "documents": [
                       {"title": "Note", "text": "Paris is in France."}]},
}

BASIC = ["user_only", "system_user", "multi_turn", "system_multi_turn"]


def cases():
    for name in BASIC:
        for gen in (True, False):
            yield name, {"add_generation_prompt": gen, "bos_token": "<s>", "eos_token": "</s>"}
    for name in ("user_only", "multi_turn"):
        yield name, {"add_generation_prompt": True, "bos_token": "<bos>", "eos_token": "<eos>"}
    for name in CONVERSATIONS:
        if name in BASIC:
            continue
        yield name, {"add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}


def builtin_sources(repo):
    path = os.path.join(repo, "engine", "chat", "builtin_templates.cpp")
    text = open(path, encoding="utf-8").read()
    sources = dict(re.findall(r'constexpr std::string_view (k\w+) = R"J\((.*?)\)J";', text, re.S))
    table = re.findall(r'\{"([\w-]+)", (k\w+)\}', text)
    return {name: sources[var] for name, var in table}


def render(env, source, messages, options):
    extra = options.get("extra_context", {})
    context = dict(messages=messages, add_generation_prompt=options["add_generation_prompt"],
                   bos_token=options["bos_token"], eos_token=options["eos_token"])
    context.update(extra)
    try:
        return {"expected": env.from_string(source).render(**context)}
    except RaisedByTemplate as e:
        return {"raised": str(e)}
    except jinja2.TemplateSyntaxError:
        raise
    except Exception as e:  # jinja2 refuses this input: our renderer must refuse it too
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--templates", default=os.path.join(repo, "..", "shared", "models", "chat_templates"))
    parser.add_argument("--out", default=os.path.join(repo, "tests", "data", "chat", "goldens.json"))
    args = parser.parse_args()

    env = make_environment()
    templates = []
    for file in sorted(os.listdir(args.templates)):
        if file.endswith(".jinja"):
            with open(os.path.join(args.templates, file), encoding="utf-8", newline="") as f:
                templates.append((file, f.read()))
    for name, source in builtin_sources(repo).items():
        templates.append(("builtin:" + name, source))

    out_cases = []
    for template, source in templates:
        for conversation, options in cases():
            options = dict(options)
            if conversation in EXTRA:
                options["extra_context"] = EXTRA[conversation]
            case = {"template": template, "conversation": conversation, "options": options}
            if not template.startswith("builtin:"):
                case["template_bytes"] = len(source.encode("utf-8"))
            case.update(render(env, source, CONVERSATIONS[conversation], options))
            out_cases.append(case)

    doc = {
        "generator": "tools/gen_chat_goldens.py",
        "jinja2_version": jinja2.__version__,
        "now": FIXED_NOW.strftime("%Y-%m-%dT%H:%M:%S"),
        "conversations": CONVERSATIONS,
        "cases": out_cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    counts = {k: sum(1 for c in out_cases if k in c) for k in ("expected", "raised", "error")}
    print(f"{len(out_cases)} cases from {len(templates)} templates -> {args.out} {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
