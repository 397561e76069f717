"""The embedded demo endpoint: a real local LLM server (uvicorn + Starlette on 127.0.0.1) that
speaks all five wire dialects, with every failure on a menu. Qt-free.

    scenarios.py   the one table: model name -> Scenario (content, pacing, spelling, fault)
    script.py      a provider-neutral answer as timed steps (text, reasoning, tool fragments)
    wire/          one writer per dialect: steps -> that provider's exact frames (bytes)
    playback.py    the one streaming loop: pacing, keep-alives, batching, transport faults
    ask.py         reading each dialect's request (model, stream, last user text, max tokens)
    app.py         the Starlette routes and HTTP-level faults
    server.py      DemoServer (background thread) and serve_forever (`streamscope demo-server`)
"""
