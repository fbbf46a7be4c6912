"""The scripted model server's OpenAI answers, checked by OpenAI's own SDK.

Run by tests/it/sdk_openai.rs with the scripted server's base URL and the
answers it was scripted with (JSON). Each call goes to the server over
HTTP through the SDK, in the order the Rust test scripted them:

1. Responses API, whole: text with reasoning; a function call; a custom
   (freeform) tool call.
2. Responses API, streamed through `client.responses.stream`: the same two.
3. Chat Completions, whole: text; a tool call.
4. Chat Completions, streamed through `client.chat.completions.stream`.

A whole body is parsed with the SDK's response model (`model_validate`), a
streamed one is fed event by event to the SDK's stream accumulator (which
refuses events out of order), each event validated as the SDK's event type,
and the accumulated response validated again. Exits non-zero with the
reason on the first mismatch.
"""

import json
import sys

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

EVENT = TypeAdapter(ResponseStreamEvent)
TOOLS_RESPONSES = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "strict": False,
    },
    {"type": "custom", "name": "apply_patch", "description": "Edit files with a patch."},
]
TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


def check_response(what, response, want):
    """A Responses API response against the scripted answer `want`."""
    kinds = [item.type for item in response.output]
    check(f"{what}: item types", kinds, want["types"])
    reasoning = [item for item in response.output if item.type == "reasoning"][0]
    check(f"{what}: reasoning id", reasoning.id, want["reasoning_id"])
    check(f"{what}: summary", [s.text for s in reasoning.summary], want["summary"])
    check(f"{what}: encrypted content", reasoning.encrypted_content, want["encrypted"])
    if "text" in want:
        check(f"{what}: text", response.output_text, want["text"])
    if "arguments" in want:
        call = [item for item in response.output if item.type == "function_call"][0]
        check(f"{what}: call id", call.call_id, want["call_id"])
        check(f"{what}: arguments", json.loads(call.arguments), want["arguments"])
    if "input" in want:
        call = [item for item in response.output if item.type == "custom_tool_call"][0]
        check(f"{what}: call id", call.call_id, want["call_id"])
        check(f"{what}: name", call.name, want["name"])
        check(f"{what}: input", call.input, want["input"])
    check(f"{what}: status", response.status, "completed")
    check(f"{what}: input tokens", response.usage.input_tokens, want["input_tokens"])
    check(
        f"{what}: cached tokens",
        response.usage.input_tokens_details.cached_tokens,
        want["cached_tokens"],
    )
    check(
        f"{what}: reasoning tokens",
        response.usage.output_tokens_details.reasoning_tokens,
        want["reasoning_tokens"],
    )


def responses_whole(client, want):
    raw = client.responses.with_raw_response.create(
        model="gpt-5", input="hi", tools=TOOLS_RESPONSES, store=False
    )
    check_response("responses whole", Response.model_validate(raw.http_response.json()), want)


def responses_streamed(client, want):
    with client.responses.stream(
        model="gpt-5", input="hi", tools=TOOLS_RESPONSES, store=False
    ) as stream:
        seen = []
        for event in stream:
            EVENT.validate_python(event.to_dict())
            seen.append(event.type)
        final = stream.get_final_response()
    check("responses streamed: last event", seen[-1], "response.completed")
    check_response("responses streamed", Response.model_validate(final.to_dict()), want)


def check_chat(what, completion, want):
    message = completion.choices[0].message
    if "text" in want:
        check(f"{what}: text", message.content, want["text"])
        check(f"{what}: finish", completion.choices[0].finish_reason, "stop")
    if "arguments" in want:
        call = message.tool_calls[0]
        check(f"{what}: call id", call.id, want["call_id"])
        check(f"{what}: arguments", json.loads(call.function.arguments), want["arguments"])
        check(f"{what}: finish", completion.choices[0].finish_reason, "tool_calls")
    check(f"{what}: prompt tokens", completion.usage.prompt_tokens, want["input_tokens"])
    check(
        f"{what}: cached tokens",
        completion.usage.prompt_tokens_details.cached_tokens,
        want["cached_tokens"],
    )


def chat_whole(client, want):
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "hi"}], tools=TOOLS_CHAT
    )
    check_chat("chat whole", ChatCompletion.model_validate(raw.http_response.json()), want)


def chat_streamed(client, want):
    with client.chat.completions.stream(
        model="gpt-4.1",
        messages=[{"role": "user", "content": "hi"}],
        tools=TOOLS_CHAT,
        stream_options={"include_usage": True},
    ) as stream:
        for event in stream:
            if event.type == "chunk":
                ChatCompletionChunk.model_validate(event.chunk.to_dict())
        final = stream.get_final_completion()
    check_chat("chat streamed", ChatCompletion.model_validate(final.to_dict()), want)


def main():
    base_url, wanted = sys.argv[1], json.loads(sys.argv[2])
    client = openai.OpenAI(base_url=base_url, api_key="sk-dummy", max_retries=0)
    for want in wanted["responses"]:
        responses_whole(client, want)
    for want in wanted["responses"]:
        responses_streamed(client, want)
    for want in wanted["chat"]:
        chat_whole(client, want)
    for want in wanted["chat"]:
        chat_streamed(client, want)
    print("ok")


if __name__ == "__main__":
    main()
