#!/usr/bin/env python3
# tests/serve/test_openai_client.py — the `openai` Python package against the real
# `strata-engine serve`: a chat completion, non-streaming and streaming, equals `run`'s text.
# Usage: test_openai_client.py STRATA_ENGINE MODEL.gguf. tools/setup.sh installs the openai package,
# so its absence fails like any other problem.
import json
import re
import subprocess
import sys
import threading

try:
    import openai
except ImportError:
    print("FAIL: the openai package is not installed (tools/setup.sh installs it: python3 -m pip install openai)")
    sys.exit(1)


def validate(value, schema, where="$"):
    """The subset of JSON Schema the server constrains to (type, properties, items, enum, lengths)."""
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
        return
    t = schema.get("type")
    checks = {"object": dict, "array": list, "string": str, "boolean": bool}
    if t in checks:
        assert isinstance(value, checks[t]), f"{where}: {value!r} is not {t}"
    if t == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: {value!r} is not an integer"
    if t == "object":
        for name in schema.get("required", []):
            assert name in value, f"{where}: '{name}' missing"
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                validate(value[name], sub, f"{where}.{name}")
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(schema.get("properties", {}))
            assert not extra, f"{where}: extra properties {extra}"
    if t == "array":
        assert len(value) <= schema.get("maxItems", len(value)), f"{where}: too many items"
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{where}[{i}]")
    if t == "string" and "maxLength" in schema:
        assert len(value) <= schema["maxLength"], f"{where}: {value!r} too long"


def main():
    binary, model = sys.argv[1], sys.argv[2]
    n = 48
    expected = subprocess.run([binary, "run", "-m", model, "-p", "Once upon a time", "--temp", "0", "-n", str(n),
                               "--no-echo"], check=True, capture_output=True, text=True, timeout=120).stdout
    assert expected, "run printed nothing"

    key = "test-key-123"
    server = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--api-key", key],
                              stderr=subprocess.PIPE, text=True)
    try:
        port = None
        log = []
        for line in server.stderr:
            log.append(line)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "server did not start:\n" + "".join(log)
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()  # keep draining

        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0, timeout=60)
        models = client.models.list()
        assert [m.id for m in models.data] == ["stories260K"], models

        messages = [{"role": "user", "content": "Once upon a time"}]
        reply = client.chat.completions.create(model="stories260K", messages=messages, temperature=0, max_tokens=n)
        text = reply.choices[0].message.content
        assert text == expected, f"non-streaming text {text!r} != run's {expected!r}"
        assert reply.choices[0].finish_reason == "length", reply
        assert reply.usage.completion_tokens == n and reply.usage.prompt_tokens == 5, reply.usage

        stream = client.chat.completions.create(model="stories260K", messages=messages, temperature=0, max_tokens=n,
                                                stream=True, stream_options={"include_usage": True})
        pieces, finish, usage = [], None, None
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                if choice.finish_reason:
                    finish = choice.finish_reason
        streamed = "".join(pieces)
        assert streamed == expected, f"streamed text {streamed!r} != run's {expected!r}"
        assert len(pieces) == n, (len(pieces), pieces)  # one chunk per token, however the two sides interleave
        assert finish == "length", finish
        assert usage is not None and usage.completion_tokens == n, usage

        completion = client.completions.create(model="stories260K", prompt="Once upon a time", temperature=0,
                                               max_tokens=n)
        assert completion.choices[0].text == expected, completion

        # A list of prompts (issue 48): each gets its choices, in OpenAI's order (prompt k's choice j
        # at index k * n + j); usage counts every prompt once.
        alone = client.completions.create(model="stories260K", prompt="The dog", temperature=0, max_tokens=n)
        both = client.completions.create(model="stories260K", prompt=["Once upon a time", "The dog"], temperature=0,
                                         max_tokens=n, n=2)
        assert [c.index for c in both.choices] == [0, 1, 2, 3], both
        assert [c.text for c in both.choices] == [expected, expected, alone.choices[0].text, alone.choices[0].text], both
        assert both.usage.prompt_tokens == completion.usage.prompt_tokens + alone.usage.prompt_tokens, both.usage
        assert both.usage.completion_tokens == 4 * n, both.usage
        ids = client.completions.create(model="stories260K", prompt=[[1, 300, 301], [1, 302]], temperature=0, max_tokens=2)
        assert len(ids.choices) == 2 and ids.usage.prompt_tokens == 5, ids

        # response_format json_schema (constrained decoding): the output parses and validates, at
        # any temperature. maxLength / maxItems keep a story model's strings and lists finite.
        schema = {"type": "object",
                  "properties": {"name": {"type": "string", "maxLength": 12},
                                 "age": {"type": "integer"},
                                 "pet": {"enum": ["cat", "dog", None]},
                                 "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
                                 "ok": {"type": "boolean"}},
                  "required": ["name", "age", "pet", "tags", "ok"], "additionalProperties": False}
        for seed in range(3):
            r = client.chat.completions.create(
                model="stories260K", messages=messages, temperature=1.0, seed=seed, max_tokens=200,
                response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}})
            content = r.choices[0].message.content
            assert r.choices[0].finish_reason == "stop", (r.choices[0].finish_reason, content)
            value = json.loads(content)
            validate(value, schema)
        # anyOf (Optional fields) and $ref to $defs, as Pydantic writes them (issue 48).
        pydantic_like = {"$defs": {"Pet": {"type": "object", "properties": {"kind": {"enum": ["cat", "dog"]}},
                                           "required": ["kind"]}},
                         "type": "object",
                         "properties": {"name": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
                                        "pet": {"$ref": "#/$defs/Pet"}},
                         "required": ["name", "pet"]}
        for seed in range(3):
            r = client.chat.completions.create(
                model="stories260K", messages=messages, temperature=1.0, seed=seed, max_tokens=100,
                response_format={"type": "json_schema", "json_schema": {"name": "owner", "schema": pydantic_like}})
            value = json.loads(r.choices[0].message.content)
            assert value["name"] is None or (isinstance(value["name"], str) and len(value["name"]) <= 10), value
            assert value["pet"]["kind"] in ("cat", "dog"), value
        obj = client.chat.completions.create(model="stories260K", messages=messages, temperature=0.7, seed=1,
                                             max_tokens=200, response_format={"type": "json_object"})
        if obj.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(obj.choices[0].message.content), dict), obj.choices[0].message.content
        lp = client.chat.completions.create(model="stories260K", messages=messages, temperature=0, max_tokens=4,
                                            logprobs=True, top_logprobs=2)
        assert len(lp.choices[0].logprobs.content) == 4, lp
        assert len(lp.choices[0].logprobs.content[0].top_logprobs) == 2, lp

        # Tools with a template that has none (issue 48: a generic tool prompt, as llama-server
        # does): a forced call comes back as tool_calls; a tool turn and its result render.
        tools = [{"type": "function", "function": {"name": "get_time", "description": "The time in a city",
                                                    "parameters": {"type": "object",
                                                                   "properties": {"city": {"type": "string", "maxLength": 8}},
                                                                   "required": ["city"]}}}]
        forced = client.chat.completions.create(model="stories260K", messages=messages, tools=tools,
                                                tool_choice="required", temperature=0, max_tokens=60)
        call = forced.choices[0].message.tool_calls
        assert call and call[0].function.name == "get_time", forced
        assert forced.choices[0].finish_reason == "tool_calls", forced
        assert isinstance(json.loads(call[0].function.arguments), dict), call
        auto = client.chat.completions.create(model="stories260K", messages=messages, tools=tools, tool_choice="auto",
                                              temperature=0, max_tokens=4)
        assert auto.choices[0].message is not None, auto
        turn = messages + [{"role": "assistant", "content": None,
                            "tool_calls": [{"id": call[0].id, "type": "function",
                                            "function": {"name": "get_time", "arguments": call[0].function.arguments}}]},
                           {"role": "tool", "tool_call_id": call[0].id, "content": "noon"}]
        after = client.chat.completions.create(model="stories260K", messages=turn, tools=tools, temperature=0, max_tokens=4)
        assert after.usage.prompt_tokens > auto.usage.prompt_tokens, (after.usage, auto.usage)

        # Errors come back as the package's typed exceptions.
        try:
            client.chat.completions.create(model="no-such-model", messages=messages, max_tokens=4)
            raise AssertionError("unknown model accepted")
        except openai.NotFoundError as e:
            assert e.status_code == 404
        bad = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0)
        try:
            bad.chat.completions.create(model="stories260K", messages=messages, max_tokens=4)
            raise AssertionError("wrong key accepted")
        except openai.AuthenticationError as e:
            assert e.status_code == 401
        print(f"ok: openai {openai.__version__}: {len(pieces)} chunks, text {expected[:40]!r}...")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
