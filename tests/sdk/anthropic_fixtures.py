"""Parses what the scripted model server sends for Anthropic's Messages API
with Anthropic's own Python SDK: non-streamed bodies through
`anthropic.types.Message.model_validate`, streams through the SDK's stream
accumulation (`client.messages.stream(...).get_final_message()`), error
bodies through the SDK's error classes.

Run by tests/it/sdk_anthropic.rs, which starts the server with the script
below, step for step (the two lists must agree):

    python anthropic_fixtures.py BASE_URL

Prints one line per check; exits non-zero at the first that fails.
"""

import sys

import anthropic
from anthropic.types import Message

THOUGHT = 'Read "a.txt" first \u2014 then\nanswer.'
SIGNATURE = "EqQBCkgIBxABGAIqQFm9vYmFy+/sig=="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
TOOL_INPUT = {"path": "a.txt"}

REQUEST = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
}


def no_unknown_fields(message):
    """The SDK keeps fields its types do not declare in `model_extra`: a
    fixture must have none, at any level."""
    assert not message.model_extra, f"unknown message fields: {message.model_extra}"
    assert not message.usage.model_extra, f"unknown usage fields: {message.usage.model_extra}"
    for block in message.content:
        assert not block.model_extra, f"unknown {block.type} fields: {block.model_extra}"


def text(message):
    assert [b.type for b in message.content] == ["text"], message.content
    assert message.content[0].text == "Hello from the fixture.", message.content
    assert message.stop_reason == "end_turn", message.stop_reason


def tool_use(message):
    assert [b.type for b in message.content] == ["tool_use"], message.content
    block = message.content[0]
    assert block.name == "read_file" and block.input == TOOL_INPUT, block
    assert block.id.startswith("toolu_"), block.id
    assert message.stop_reason == "tool_use", message.stop_reason


def thinking(message):
    assert [b.type for b in message.content] == ["thinking", "text"], message.content
    block = message.content[0]
    assert block.thinking == THOUGHT, repr(block.thinking)
    assert block.signature == SIGNATURE, repr(block.signature)
    assert message.content[1].text == "Done.", message.content


def redacted_thinking(message):
    types = [b.type for b in message.content]
    assert types == ["redacted_thinking", "thinking", "tool_use"], types
    assert message.content[0].data == REDACTED, message.content[0]
    assert message.content[1].signature == SIGNATURE, message.content[1]
    assert message.content[2].input == TOOL_INPUT, message.content[2]


def whole(client, check):
    raw = client.messages.with_raw_response.create(**REQUEST)
    message = Message.model_validate(raw.http_response.json())
    no_unknown_fields(message)
    check(message)
    print(f"ok: {check.__name__} (non-streamed)")


def streamed(client, check):
    with client.messages.stream(**REQUEST) as stream:
        message = stream.get_final_message()
    no_unknown_fields(message)
    check(message)
    print(f"ok: {check.__name__} (streamed)")


def refused(client, error_class, error_type, words, stream=False):
    try:
        if stream:
            with client.messages.stream(**REQUEST) as events:
                for _ in events:
                    pass
        else:
            client.messages.create(**REQUEST)
    except error_class as error:
        body = error.body
        assert body["type"] == "error", body
        assert body["error"]["type"] == error_type, body
        assert words in body["error"]["message"], body
        print(f"ok: {error_class.__name__} {error_type} ({'streamed' if stream else 'non-streamed'})")
        return
    raise AssertionError(f"no {error_class.__name__}")


def main():
    client = anthropic.Anthropic(base_url=sys.argv[1], api_key="x", max_retries=0)
    for check in [text, tool_use, thinking, redacted_thinking]:
        whole(client, check)
        streamed(client, check)
    refused(client, anthropic.BadRequestError, "invalid_request_error", "thinking.type.enabled")
    refused(
        client,
        anthropic.BadRequestError,
        "invalid_request_error",
        "thinking.type.enabled",
        stream=True,
    )
    refused(client, anthropic.BadRequestError, "invalid_request_error", "prompt is too long")
    refused(client, anthropic.RateLimitError, "rate_limit_error", "Rate limit")
    refused(client, anthropic.OverloadedError, "overloaded_error", "Overloaded")
    refused(client, anthropic.InternalServerError, "api_error", "Internal server error")
    # An `error` event inside a 200 stream, after some text.
    refused(client, anthropic.APIStatusError, "overloaded_error", "Overloaded", stream=True)


if __name__ == "__main__":
    main()
