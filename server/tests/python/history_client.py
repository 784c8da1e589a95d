"""Talks to the server's /v1/chat/completions the way a plain SDK loop
does: no session, the whole history sent again each turn (a system prompt,
the user's messages, the answers it got back, a picture), with sampling
fields on the second turn; then an out-of-range `temperature`. Prints what
it got (one JSON object) for the Rust test (server/tests/it/openai_sdk_history.rs)
to compare with what the model server received.

Usage: python3 history_client.py BASE_URL TOKEN DATA_URL
"""
import json
import sys

import openai
from openai import OpenAI

base_url, token, data_url = sys.argv[1], sys.argv[2], sys.argv[3]
client = OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0)

history = [
    {"role": "system", "content": "CLIENT SYSTEM"},
    {"role": "user", "content": "FIRST QUESTION"},
]
first = client.chat.completions.create(model="lc-agent", messages=history)
history.append({"role": "assistant", "content": first.choices[0].message.content})
history.append({"role": "user", "content": [
    {"type": "text", "text": "SECOND QUESTION"},
    {"type": "image_url", "image_url": {"url": data_url}},
]})
streamed = client.chat.completions.create(
    model="lc-agent", messages=history, stream=True,
    temperature=0.3, max_tokens=50, stop=["END"], seed=7, top_p=0.9,
)
second = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)

refused = None
try:
    client.chat.completions.create(model="lc-agent", messages=history, temperature=7)
except openai.BadRequestError as e:
    refused = {"status": e.status_code, "param": e.param, "code": e.code, "type": e.type}

print(json.dumps({
    "first": first.choices[0].message.content,
    "first_session": (first.model_extra or {}).get("session"),
    "second": second,
    "refused": refused,
}))
