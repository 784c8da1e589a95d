"""Drives the server's OpenAI endpoints with the official `openai` Python
package and reports what a client sees of usage and compatibility: one
completion (its `usage`), one streamed with `stream_options.include_usage`
(the last chunk's usage, the session in every chunk's id),
`models.retrieve`, and the errors for client tools and a response_format schema that is no schema.
Prints one JSON object for the Rust test (server/tests/it/usage.rs) to check.

Usage: python3 usage_client.py BASE_URL TOKEN
"""
import json
import sys

import openai
from openai import OpenAI

base_url, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0)
model = client.models.retrieve("lc-agent")
try:
    client.models.retrieve("gpt-nothing")
    missing = None
except openai.NotFoundError as e:
    missing = e.status_code

first = client.chat.completions.create(
    model=model.id,
    messages=[{"role": "user", "content": "Delegate the research."}],
)
session = first.model_extra["session"]

stream = client.chat.completions.create(
    model=model.id,
    messages=[{"role": "user", "content": "And now?"}],
    stream=True,
    stream_options={"include_usage": True},
    extra_body={"session": session},
)
chunk_ids = set()
usage_chunks = []
pieces = []
for chunk in stream:
    chunk_ids.add(chunk.id)
    if chunk.usage is not None:
        usage_chunks.append({"choices": len(chunk.choices), "usage": chunk.usage.model_dump()})
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)


def refused(**kwargs):
    try:
        client.chat.completions.create(
            model=model.id, messages=[{"role": "user", "content": "hi"}], **kwargs
        )
        return None
    except openai.BadRequestError as e:
        return {"status": e.status_code, "message": e.message}


tools = refused(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
schema = refused(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 12}}})

print(json.dumps({
    "model": model.id,
    "missing_model_status": missing,
    "first_usage": first.usage.model_dump(),
    "first_id": first.id,
    "session": session,
    "streamed": "".join(pieces),
    "chunk_ids": sorted(chunk_ids),
    "usage_chunks": usage_chunks,
    "tools_refused": tools,
    "json_schema_refused": schema,
}))
