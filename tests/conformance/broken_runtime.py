"""A deliberately broken Engram runtime for the harness tests: it fetches the export and injects
``system_prompt_injection`` without fetching keys, checking a signature or looking at
``expires_at``; it sends ``/correct`` lines to the LLM like any other text and never syncs.

Run as ``python broken_runtime.py``; it reads the harness's environment and standard input.
"""

from __future__ import annotations

import os
import sys

import httpx


def main() -> None:
    provider = os.environ["ENGRAM_PROVIDER_URL"].rstrip("/")
    llm = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {os.environ['ENGRAM_TOKEN']}"}
    scope = os.environ.get("ENGRAM_SCOPE")
    params = {"scope": scope} if scope else {}
    with httpx.Client(timeout=10) as http:
        export = http.get(provider + "/v1/context", headers=headers, params=params).json()
        injection = str(export.get("system_prompt_injection", ""))
        for line in sys.stdin:
            if not line.strip():
                continue
            messages = [
                {"role": "system", "content": injection},
                {"role": "user", "content": line.strip()},
            ]
            reply = http.post(llm, json={"model": "broken", "messages": messages}).json()
            print(reply["choices"][0]["message"]["content"])


if __name__ == "__main__":
    main()
