"""Sends a picture to the server's /v1/chat/completions with the official
`openai` Python package: an `image_url` part with a data URL (and its
`detail`) between two text parts. Prints the answer's text and the session
it was saved in (one JSON object) for the Rust test
(server/tests/it/images.rs) to check.

Usage: python3 image_client.py BASE_URL TOKEN DATA_URL
"""
import json
import sys

from openai import OpenAI

base_url, token, data_url = sys.argv[1], sys.argv[2], sys.argv[3]
client = OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0)
answer = client.chat.completions.create(
    model="lc-agent",
    messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": data_url, "detail": "low"}},
        {"type": "text", "text": "Answer in one sentence."},
    ]}],
)
# lc-agent's own field: the session the conversation was saved in.
session = (answer.model_extra or {}).get("session")
print(json.dumps({"answer": answer.choices[0].message.content, "session": session}))
