"""Drives `lc-agent serve` with the official `openai` Python package:
one completion without streaming, one streamed, continuing the first's
session. Prints one JSON object for the Rust test to check.

Usage: python3 openai_client.py BASE_URL TOKEN
"""
import json
import sys

from openai import OpenAI

base_url, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url + "/v1", api_key=token)

models = [m.id for m in client.models.list()]
first = client.chat.completions.create(
    model=models[0],
    messages=[{"role": "user", "content": "Write the greeting file."}],
)
session = first.model_extra["session"]
stream = client.chat.completions.create(
    model=models[0],
    messages=[{"role": "user", "content": "And now?"}],
    stream=True,
    extra_body={"session": session},
)
pieces = []
finish = None
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
    if chunk.choices and chunk.choices[0].finish_reason:
        finish = chunk.choices[0].finish_reason
try:
    client.chat.completions.create(model=models[0], messages=[])
    bad = None
except Exception as e:  # the server's 400, as the client reports it
    bad = getattr(e, "status_code", None)
print(json.dumps({
    "models": models,
    "first": first.choices[0].message.content,
    "first_finish": first.choices[0].finish_reason,
    "session": session,
    "streamed": "".join(pieces),
    "stream_finish": finish,
    "bad_status": bad,
}))
