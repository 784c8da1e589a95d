"""Sends /v1/chat/completions a history with the client's own tool round:
an assistant message with `tool_calls`, the `tool` messages answering them,
then the user's next question; then the same history with a `tool` message
answering no call, and with a user message whose content is null. Prints
what it got (one JSON object) for the Rust test
(server/tests/it/openai_tool_history.rs) to compare with what the model
server received.

Usage: python3 tool_history_client.py BASE_URL TOKEN
"""
import json
import sys

import openai
from openai import OpenAI

base_url, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0)

history = [
    {"role": "system", "content": "CLIENT SYSTEM"},
    {"role": "user", "content": "WEATHER IN PARIS AND ROME?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_b", "type": "function",
         "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}},
    ]},
    {"role": "tool", "tool_call_id": "call_a", "content": "PARIS SUNNY"},
    {"role": "tool", "tool_call_id": "call_b", "content": "ROME RAINY"},
    {"role": "assistant", "content": "Paris is sunny, Rome is rainy."},
    {"role": "user", "content": "AND TOMORROW?"},
]
answer = client.chat.completions.create(model="lc-agent", messages=history)


def refusal(messages):
    try:
        client.chat.completions.create(model="lc-agent", messages=messages)
    except openai.BadRequestError as e:
        return {"status": e.status_code, "param": e.param, "code": e.code, "type": e.type}
    return None


stray = history[:3] + [
    {"role": "tool", "tool_call_id": "call_a", "content": "PARIS SUNNY"},
    {"role": "tool", "tool_call_id": "call_zzz", "content": "NOBODY ASKED"},
] + history[5:]
unanswered = history[:3] + [
    {"role": "tool", "tool_call_id": "call_a", "content": "PARIS SUNNY"},
] + history[5:]
null_content = [{"role": "user", "content": None}, {"role": "user", "content": "HI"}]

print(json.dumps({
    "answer": answer.choices[0].message.content,
    "stray": refusal(stray),
    "unanswered": refusal(unanswered),
    "null_content": refusal(null_content),
}))
