"""A burst of concurrent chat completions from one client, the way an app
does with the `openai` package: N threads, one shared client, the SDK's
own retries (max_retries=2: it retries a 429 after its Retry-After, and a
dropped connection). Prints one JSON object: how many succeeded, the
failures (their kind and status), and the slowest call in seconds, for the
Rust test (server/tests/it/fair.rs).

Usage: python3 burst_client.py BASE_URL TOKEN N
"""
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import openai
from openai import OpenAI

base_url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = OpenAI(
    base_url=base_url + "/v1",
    api_key=token,
    max_retries=2,
    timeout=120,
)


def one(i):
    t = time.monotonic()
    try:
        r = client.chat.completions.create(
            model="lc-agent", messages=[{"role": "user", "content": f"burst {i}"}]
        )
        return {"ok": r.choices[0].message.content is not None, "took": time.monotonic() - t}
    except openai.APIStatusError as e:
        return {"ok": False, "error": type(e).__name__, "status": e.status_code, "took": time.monotonic() - t}
    except Exception as e:  # connection errors after the SDK's retries
        return {"ok": False, "error": f"{type(e).__name__}: {e}", "took": time.monotonic() - t}


with ThreadPoolExecutor(max_workers=n) as pool:
    results = list(pool.map(one, range(n)))

print(json.dumps({
    "ok": sum(1 for r in results if r["ok"]),
    "failures": [r for r in results if not r["ok"]][:10],
    "slowest": max(r["took"] for r in results),
}))
