"""One non-streamed chat completion through the openai SDK (its default
retries) against a server whose --timeout is shorter than the run.
Prints JSON: the answer, the session and run the response names, and how
many retries the SDK took. Used by server/tests/it/openai_retries.rs."""
import json
import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2])
raw = client.chat.completions.with_raw_response.create(
    model="lc-agent", messages=[{"role": "user", "content": "take your time"}]
)
completion = raw.parse()
print(json.dumps({
    "content": completion.choices[0].message.content,
    "session": raw.headers.get("x-lc-agent-session"),
    "run": raw.headers.get("x-lc-agent-run"),
    "retries": getattr(raw, "retries_taken", None),
}))
