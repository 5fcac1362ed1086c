#!/usr/bin/env python3
# tests/serve/test_openai_client.py — the `openai` Python package against the real
# `strata-engine serve`: a chat completion, non-streaming and streaming, equals `run`'s text.
# Usage: test_openai_client.py STRATA_ENGINE MODEL.gguf. tools/setup.sh installs the openai package,
# so its absence fails like any other problem.
import base64
import http.client
import json
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
try:
    import numpy as np
    import reference_model as ref
except ImportError as e:
    print(f"FAIL: {e} (tools/setup.sh installs numpy and gguf)")
    sys.exit(1)
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


# Embeddings against the NumPy forward pass (tests/reference/reference_model.py, float64, keys and
# values rounded to f16 as the server's default KV cache stores them): mean of the rows after the
# output norm, unit length. Measured on stories260K: max |a - b| 5e-8 for the short texts, 4.3e-5
# for the 96-token one (the same whether read in pieces of 64 or 256 tokens; against a reference
# with an f32 cache: 1e-4 and 8.7e-5, so the check sees the cache's rounding). Tolerance: 2e-4 per
# element of a unit vector (about 1e-3 of the largest element, as reference_forward.py allows for
# logits with an f16 cache).
EMBED_TOL = 2e-4


def reference_embedding(m, tokens, pooling="mean"):
    h = ref.final_hidden(m, tokens, kv_f16=True)
    v = h.mean(axis=0) if pooling == "mean" else h[-1]
    return v / np.linalg.norm(v)


def check_embeddings(client, binary, model, port, key):
    m = ref.Model(model)
    # The last is longer than a prompt chunk (64 tokens): evaluated in several pieces.
    texts = ["Once upon a time", "The dog ran to the park.", "Lily had a red ball",
             "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
             "with her big red ball. One day, she saw a dog who wanted to play too. They ran and laughed "
             "all day until the sun went down, and then they went home happy and tired."]
    token_lists = [[int(t) for t in subprocess.run([binary, "tokenize", "-m", model, "-p", t], check=True,
                                                    capture_output=True, text=True).stdout.split()] for t in texts]
    # The package asks for base64 by default and decodes it; float is asked explicitly.
    batched = client.embeddings.create(model="stories260K", input=texts)
    as_float = client.embeddings.create(model="stories260K", input=texts, encoding_format="float")
    assert [d.index for d in batched.data] == [0, 1, 2, 3], batched
    assert len(token_lists[3]) > 64, len(token_lists[3])
    assert batched.usage.prompt_tokens == sum(len(t) for t in token_lists), (batched.usage, token_lists)
    for k, tokens in enumerate(token_lists):
        got = np.asarray(batched.data[k].embedding, dtype=np.float64)
        assert got.shape == (m.n_embd,), got.shape
        err = np.abs(got - reference_embedding(m, tokens)).max()
        assert err < EMBED_TOL, f"embedding {k}: max |server - reference| {err} >= {EMBED_TOL}"
        assert abs(np.linalg.norm(got) - 1) < 1e-6, np.linalg.norm(got)
        # float and base64 carry the same f32 values.
        assert np.array_equal(np.asarray(as_float.data[k].embedding, dtype=np.float32),
                              np.asarray(batched.data[k].embedding, dtype=np.float32)), k
        # Exact: the same input alone (as text and as token ids) gives the same vector bit for bit.
        alone = client.embeddings.create(model="stories260K", input=texts[k])
        ids = client.embeddings.create(model="stories260K", input=tokens)
        assert alone.data[0].embedding == batched.data[k].embedding, k
        assert ids.data[0].embedding == batched.data[k].embedding, k
    # Token-id lists, and the last-token pooling extension (extra_body).
    lists = client.embeddings.create(model="stories260K", input=token_lists[:2])
    assert [d.embedding for d in lists.data] == [d.embedding for d in batched.data[:2]], lists
    last = client.embeddings.create(model="stories260K", input=texts[0], extra_body={"pooling": "last"})
    err = np.abs(np.asarray(last.data[0].embedding) - reference_embedding(m, token_lists[0], "last")).max()
    assert err < EMBED_TOL, f"last-token embedding: {err}"
    # While a generation runs on another slot the vectors stay the same (each input is its own eval).
    stream = client.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Once"}],
                                            temperature=0, max_tokens=200, stream=True)
    first = next(iter(stream))
    during = client.embeddings.create(model="stories260K", input=texts)
    assert [d.embedding for d in during.data] == [d.embedding for d in batched.data], "changed beside a stream"
    stream.close()
    assert first is not None
    # The raw base64: little-endian float32, as OpenAI sends it.
    raw = client.embeddings.with_raw_response.create(model="stories260K", input=texts[0], encoding_format="base64")
    body = json.loads(raw.text)
    decoded = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
    assert np.array_equal(decoded, np.asarray(batched.data[0].embedding, dtype=np.float32)), decoded[:4]
    for bad, param in (({"dimensions": 8}, "dimensions"), ({"input": ""}, "input"), ({"input": [[1, 99999]]}, "input")):
        try:
            kwargs = {"model": "stories260K", "input": texts[0]}
            kwargs.update(bad)
            client.embeddings.create(**kwargs)
            raise AssertionError(f"{bad} accepted")
        except openai.BadRequestError as e:
            assert e.status_code == 400 and e.body["param"] == param, e.body


def model_folder():
    """Where tools/setup.sh puts the real chat models (as tests/reference/real_models.py)."""
    if os.environ.get("STRATA_MODEL_HOME"):
        return os.environ["STRATA_MODEL_HOME"]
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "strata", "models")


def start_server(args):
    server = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    log = []
    for line in server.stderr:
        log.append(line)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()  # keep draining
            return server, int(m.group(1))
    server.wait()
    raise AssertionError("server did not start:\n" + "".join(log))


def stop_server(server):
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The local time in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "utc": {"type": "boolean"}},
                   "required": ["city", "utc"]}}}


def check_smollm2(binary):
    """Tools with a real chat model (SmolLM2-135M-Instruct: its template has no tools, so the
    generic tool prompt), CORS, and embeddings of a quantized model, through the openai package."""
    model = os.path.join(model_folder(), "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert os.path.exists(model), f"{model} is missing (tools/setup.sh fetches it)"
    origin = "http://app.example"
    server, port = start_server([binary, "serve", "-m", model, "--port", "0", "--cors", origin])
    try:
        # No API key: a cross-site page must be a --cors origin (issue 48). The package sends
        # the Origin header as a browser would.
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120,
                               default_headers={"Origin": origin})
        raw = client.chat.completions.with_raw_response.create(
            model="SmolLM2-135M-Instruct.Q4_1", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
        assert raw.headers.get("access-control-allow-origin") == origin, dict(raw.headers)
        assert "origin" in raw.headers.get("vary", "").lower(), dict(raw.headers)
        evil = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0,
                             default_headers={"Origin": "http://evil.example"})
        try:
            evil.models.list()
            raise AssertionError("a cross-site origin not in --cors was answered")
        except openai.PermissionDeniedError as e:
            assert e.status_code == 403 and e.body["code"] == "cors_not_allowed", e.body
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("OPTIONS", "/v1/embeddings", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                           "Access-Control-Request-Headers": "content-type"})
        pre = conn.getresponse()
        pre.read()
        assert pre.status == 204 and pre.getheader("Access-Control-Allow-Origin") == origin, pre.getheaders()
        assert "POST" in pre.getheader("Access-Control-Allow-Methods"), pre.getheaders()
        conn.close()

        # tool_choice "auto" (issue 48: it never produced a call). Asked for a call, the model opens
        # a <tool_call> block, and the call in it is constrained to an offered name and arguments,
        # so it parses (before, the 135M model copied the prompt's "<function name>" placeholder).
        ask = [{"role": "user", "content": "Please reply with a <tool_call> block calling get_weather for Paris."}]
        auto = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=ask, tools=[WEATHER],
                                              tool_choice="auto", temperature=0, max_tokens=60)
        choice = auto.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        assert choice.message.content is None, choice.message
        call = choice.message.tool_calls[0]
        assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}, call
        # Streamed, the same call arrives as one tool_calls delta.
        names, args, finish = [], "", None
        for chunk in client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=ask, tools=[WEATHER],
                                                    tool_choice="auto", temperature=0, max_tokens=60, stream=True):
            for c in chunk.choices:
                for tc in c.delta.tool_calls or []:
                    if tc.function and tc.function.name:
                        names.append(tc.function.name)
                    if tc.function and tc.function.arguments:
                        args += tc.function.arguments
                finish = c.finish_reason or finish
        assert names == ["get_weather"] and json.loads(args) == {"city": "Paris"} and finish == "tool_calls", (names, args)
        # auto does not force: a request that needs no tool gets text.
        joke = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", tools=[WEATHER, TIME],
                                              messages=[{"role": "user", "content": "Tell me a joke about cats."}],
                                              tool_choice="auto", temperature=0, max_tokens=30)
        assert joke.choices[0].finish_reason != "tool_calls" and joke.choices[0].message.content, joke
        # "required" with two tools: the arguments follow the chosen function's parameters.
        for question in ("What time is it in Tokyo?", "What is the weather in Tokyo?"):
            r = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", tools=[WEATHER, TIME],
                                               messages=[{"role": "user", "content": question}],
                                               tool_choice="required", temperature=0, max_tokens=60)
            call = r.choices[0].message.tool_calls[0]
            assert r.choices[0].finish_reason == "tool_calls", r
            fn = {"get_weather": WEATHER, "get_time": TIME}[call.function.name]["function"]
            validate(json.loads(call.function.arguments), fn["parameters"])
            assert set(json.loads(call.function.arguments)) == set(fn["parameters"]["required"]), call
        named = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", tools=[WEATHER, TIME],
                                               messages=[{"role": "user", "content": "What is the weather in Tokyo?"}],
                                               tool_choice={"type": "function", "function": {"name": "get_time"}},
                                               temperature=0.9, seed=3, max_tokens=60)
        call = named.choices[0].message.tool_calls[0]
        assert call.function.name == "get_time", named
        validate(json.loads(call.function.arguments), TIME["function"]["parameters"])
        # The tool's result goes back, and the model answers in text.
        turn = ask + [{"role": "assistant", "content": None, "tool_calls": [
                          {"id": auto.choices[0].message.tool_calls[0].id, "type": "function",
                           "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                      {"role": "tool", "tool_call_id": auto.choices[0].message.tool_calls[0].id,
                       "content": "sunny, 24 C"}]
        after = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=turn, tools=[WEATHER],
                                               tool_choice="none", temperature=0, max_tokens=30)
        assert after.choices[0].message.content and not after.choices[0].message.tool_calls, after

        # Embeddings of a quantized model: 576 values, unit length, exact alone or in a list.
        texts = ["The capital of France is Paris.", "Cats sleep a lot."]
        both = client.embeddings.create(model="SmolLM2-135M-Instruct.Q4_1", input=texts)
        for k, t in enumerate(texts):
            v = np.asarray(both.data[k].embedding)
            assert v.shape == (576,) and abs(np.linalg.norm(v) - 1) < 1e-6, v.shape
            assert client.embeddings.create(model="SmolLM2-135M-Instruct.Q4_1", input=t).data[0].embedding == \
                both.data[k].embedding, k
    finally:
        stop_server(server)


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
        # pattern (issue 48): a regex subset compiled into the constraint; the values match it as
        # Python's re (ECMAScript's semantics for this subset) reads it, at any temperature.
        patterned = {"type": "object",
                     "properties": {"phone": {"type": "string", "pattern": "^\\(\\d{3}\\) \\d{3}-\\d{4}$"},
                                    "code": {"type": "string", "pattern": "^[A-Z]{2}(-[a-z0-9]{1,3})?$"},
                                    "word": {"anyOf": [{"type": "string", "pattern": "^(cat|dog)s?$"}, {"type": "null"}]}},
                     "required": ["phone", "code", "word"]}
        for seed in range(4):
            r = client.chat.completions.create(
                model="stories260K", messages=messages, temperature=1.0, seed=seed, max_tokens=120,
                response_format={"type": "json_schema", "json_schema": {"name": "contact", "schema": patterned}})
            assert r.choices[0].finish_reason == "stop", r.choices[0]
            value = json.loads(r.choices[0].message.content)
            assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", value["phone"]), value
            assert re.fullmatch(r"[A-Z]{2}(-[a-z0-9]{1,3})?", value["code"]), value
            assert value["word"] is None or re.fullmatch(r"(cat|dog)s?", value["word"]), value
        for pattern, feature in (("(?=a)b", "lookahead"), ("(a)\\1", "backreference"), ("\\bx", "word boundary")):
            try:
                client.chat.completions.create(
                    model="stories260K", messages=messages, max_tokens=4,
                    response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": {
                        "type": "string", "pattern": pattern}}})
                raise AssertionError(f"pattern {pattern!r} accepted")
            except openai.BadRequestError as e:
                assert e.body["code"] == "unsupported_schema" and feature in e.body["message"], e.body
        try:
            client.chat.completions.create(
                model="stories260K", messages=messages, max_tokens=4,
                response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": {
                    "type": "string", "pattern": "(a|b)*a(a|b){14}"}}})
            raise AssertionError("a pattern over the budget accepted")
        except openai.BadRequestError as e:
            assert e.body["code"] == "schema_too_large" and "automaton states" in e.body["message"], e.body
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

        check_embeddings(client, binary, model, port, key)

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
    check_smollm2(binary)
    print("ok: SmolLM2-135M-Instruct: tools (auto, required, named, streamed), CORS, embeddings")


if __name__ == "__main__":
    main()
