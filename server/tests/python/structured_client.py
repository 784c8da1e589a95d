"""Asks the server's /v1/chat/completions for a typed answer with the
official `openai` Python package: `response_format` json_schema (whole),
then json_object (streamed) on the same session. Prints one JSON object for
the Rust test (server/tests/it/structured.rs) to check.

Usage: python3 structured_client.py BASE_URL TOKEN
"""
import json
import sys

from openai import OpenAI

base_url, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0)
schema = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},
    "required": ["city", "people"],
}
first = client.chat.completions.create(
    model="lc-agent",
    messages=[{"role": "user", "content": "How big is Lyon?"}],
    response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema, "strict": False}},
)
session = first.model_extra["session"]
stream = client.chat.completions.create(
    model="lc-agent",
    messages=[{"role": "user", "content": "And Paris?"}],
    response_format={"type": "json_object"},
    stream=True,
    extra_body={"session": session},
)
pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
print(json.dumps({
    "session": session,
    "first": json.loads(first.choices[0].message.content),
    "streamed": "".join(pieces),
}))
