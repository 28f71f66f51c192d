"""A LangChain chat whose history and retriever are membank: a new session still knows
what was said in an earlier one. Runs offline: the "model" replies with what its prompt
says it remembers; put a real chat model (`init_chat_model("gpt-4o-mini")`) in its place.

    python examples/langchain_chat.py [membank.db]
"""

from __future__ import annotations

import sys
import warnings
from operator import itemgetter

from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory

from membank import Memory
from membank.integrations.langchain import MembankChatMessageHistory, MembankRetriever

# langchain-core 1.x marks RunnableWithMessageHistory deprecated (in favour of LangGraph's
# persistence), yet it is still the way a chain uses a BaseChatMessageHistory.
warnings.filterwarnings("ignore", message="RunnableWithMessageHistory is deprecated")

memory = Memory(db=sys.argv[1] if len(sys.argv) > 1 else "membank-example.db")
prompt = ChatPromptTemplate.from_messages(
    [("system", "You remember:\n{context}"), MessagesPlaceholder("history"), ("human", "{question}")]
)


def as_lines(docs: list[Document]) -> str:
    return "\n".join(f"- [{d.metadata['day']}, retention {d.metadata['retention']:.2f}] {' '.join(d.page_content.split())}" for d in docs)


def offline_model(prompt: PromptValue) -> AIMessage:
    remembered = [line for line in str(prompt.to_messages()[0].content).splitlines() if line.startswith("- [")]
    return AIMessage(f"From memory: {remembered[0]}" if remembered else "Nice to meet you!")


model = RunnableLambda(offline_model)
retriever = MembankRetriever(memory=memory, user="alice", k=3)
chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever | as_lines) | prompt | model
chat = RunnableWithMessageHistory(
    chain,
    lambda session_id: MembankChatMessageHistory(memory, "alice", session_id),
    input_messages_key="question",
    history_messages_key="history",
)

for session, question in [("monday", "I named my grey cat Miso."), ("friday", "Hi!"), ("friday", "What is my cat called?")]:
    reply = chat.invoke({"question": question}, config={"configurable": {"session_id": session}})
    print(f"[{session}] > {question}\n  {reply.content}")
