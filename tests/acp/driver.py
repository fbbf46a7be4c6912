"""An ACP client on the official Python SDK (`agent-client-protocol` on
PyPI), driving `bareagent acp` for tests/it/acp.rs.

It plays an editor: file reads are served from in-memory buffers that
differ from the disk (an unsaved buffer), writes land in those buffers
(and on disk, as an editor that saves), terminals really run their
command, and permission questions get the answers the scenario scripts.
Everything the agent sends is printed as one JSON transcript on stdout.

Usage: driver.py SCENARIO.json, where the scenario holds
  agent:        the command line of the agent
  cwd:          the workspace root
  fs, terminal: the capabilities to offer
  buffers:      {absolute path: text} served in place of the disk
  answers:      option ids, one per permission question, in order
  env:          variables set for the agent besides this process's
  cancel_on_terminal: send session/cancel once a terminal is created
  cancel_on_permission: send session/cancel when asked, then answer
                cancelled
  steps:        [{"new": {"mcp": [name | {name, command, args} | {name, url, headers}]}}, {"prompt": "text"},
                 {"load": "id"}, {"set_mode": "plan"}, {"set_config": ["effort", "high"]},
                 {"list": {"cwd"?: path (default: the workspace; null: none), "cursor"?: text}}]; a list
                 follows nextCursor to the end (a page per "listed" entry); a prompt may also be a list of
                 blocks, {"text": "..."} or {"image": {"data": base64, "mime_type": "image/png"}}
"""

import asyncio
import json
import os
import signal
import sys

import acp
from acp import schema


def dump(model):
    if model is None:
        return None
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Editor:
    def __init__(self, scenario, transcript):
        self.scenario = scenario
        self.transcript = transcript
        self.buffers = dict(scenario.get("buffers", {}))
        self.answers = list(scenario.get("answers", []))
        self.terminals = {}
        self.session_id = None
        self.conn = None

    def on_connect(self, conn):
        self.conn = conn

    def log(self, kind, **fields):
        self.transcript.append({"type": kind, **fields})

    async def session_update(self, session_id, update, **kwargs):
        self.log("update", update=dump(update))

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.log(
            "request_permission",
            toolCall=dump(tool_call),
            options=[dump(o) for o in options],
        )
        if self.scenario.get("cancel_on_permission"):
            # As an editor does when the user stops the turn while asked:
            # session/cancel, then the pending question answered cancelled.
            await self.conn.cancel(session_id=session_id)
            self.log("cancel_sent")
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        if not self.answers:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        answer = self.answers.pop(0)
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.log("read_text_file", path=path)
        if path in self.buffers:
            text = self.buffers[path]
        else:
            try:
                # As many editors read a file that is not UTF-8: lossily.
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError as error:
                raise acp.RequestError.resource_not_found(path) from error
        return schema.ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.log("write_text_file", path=path, content=content)
        self.buffers[path] = content
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        return schema.WriteTextFileResponse()

    async def create_terminal(
        self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kwargs
    ):
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.log("create_terminal", terminalId=terminal_id, command=command, args=args, cwd=cwd)
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        self.terminals[terminal_id] = {"process": process, "output": b""}

        async def collect():
            while True:
                chunk = await process.stdout.read(4096)
                if not chunk:
                    break
                self.terminals[terminal_id]["output"] += chunk

        self.terminals[terminal_id]["reader"] = asyncio.ensure_future(collect())
        if self.scenario.get("cancel_on_terminal"):
            asyncio.get_running_loop().call_soon(
                lambda: asyncio.ensure_future(self.conn.cancel(session_id=session_id))
            )
            self.log("cancel_sent")
        return schema.CreateTerminalResponse(terminal_id=terminal_id)

    def exit_status(self, terminal_id):
        process = self.terminals[terminal_id]["process"]
        if process.returncode is None:
            return None
        if process.returncode < 0:
            return schema.TerminalExitStatus(signal=signal.Signals(-process.returncode).name)
        return schema.TerminalExitStatus(exit_code=process.returncode)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        self.log("wait_for_terminal_exit", terminalId=terminal_id)
        terminal = self.terminals[terminal_id]
        await terminal["process"].wait()
        await terminal["reader"]
        status = self.exit_status(terminal_id)
        return schema.WaitForTerminalExitResponse(
            exit_code=status.exit_code, signal=status.signal
        )

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        self.log("terminal_output", terminalId=terminal_id)
        terminal = self.terminals[terminal_id]
        return schema.TerminalOutputResponse(
            output=terminal["output"].decode("utf-8", "replace"),
            truncated=False,
            exit_status=self.exit_status(terminal_id),
        )

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        self.log("kill_terminal", terminalId=terminal_id)
        process = self.terminals[terminal_id]["process"]
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        return schema.KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.log("release_terminal", terminalId=terminal_id)
        process = self.terminals[terminal_id]["process"]
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
        return schema.ReleaseTerminalResponse()

    async def ext_method(self, method, params):
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method, params):
        pass


async def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        scenario = json.load(f)
    transcript = []
    editor = Editor(scenario, transcript)
    agent = scenario["agent"]
    # The whole environment (the SDK's default keeps only a few names, not
    # the API key the agent needs); the agent's log goes to our stderr.
    async with acp.spawn_agent_process(
        editor,
        agent[0],
        *agent[1:],
        cwd=scenario["cwd"],
        env=dict(os.environ, **scenario.get("env", {})),
        transport_kwargs={"stderr": None},
    ) as (
        conn,
        process,
    ):
        capabilities = schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(
                read_text_file=scenario.get("fs", False),
                write_text_file=scenario.get("fs", False),
            ),
            terminal=scenario.get("terminal", False),
        )
        init = await conn.initialize(protocol_version=1, client_capabilities=capabilities)
        editor.log("initialized", response=dump(init))
        for step in scenario["steps"]:
            try:
                if "new" in step:
                    # A name alone is a server that exits at once; an object
                    # names a real one, run (command) or reached (url).
                    servers = [
                        schema.McpServerStdio(name=entry, command="true", args=[], env=[])
                        if isinstance(entry, str)
                        else schema.HttpMcpServer(
                            type="http",
                            name=entry["name"],
                            url=entry["url"],
                            headers=[
                                schema.HttpHeader(name=k, value=v)
                                for k, v in entry.get("headers", {}).items()
                            ],
                        )
                        if "url" in entry
                        else schema.McpServerStdio(
                            name=entry["name"],
                            command=entry["command"],
                            args=entry.get("args", []),
                            env=[],
                        )
                        for entry in step["new"].get("mcp", [])
                    ]
                    response = await conn.new_session(
                        cwd=step["new"].get("cwd", scenario["cwd"]), mcp_servers=servers
                    )
                    editor.session_id = response.session_id
                    editor.log("session", response=dump(response))
                elif "load" in step:
                    response = await conn.load_session(cwd=scenario["cwd"], session_id=step["load"])
                    editor.session_id = step["load"]
                    editor.log("loaded", response=dump(response))
                elif "list" in step:
                    cwd = step["list"].get("cwd", scenario["cwd"])
                    cursor = step["list"].get("cursor")
                    while True:
                        response = await conn.list_sessions(cwd=cwd, cursor=cursor)
                        editor.log("listed", response=dump(response))
                        cursor = response.next_cursor
                        if cursor is None:
                            break
                elif "set_mode" in step:
                    await conn.set_session_mode(session_id=editor.session_id, mode_id=step["set_mode"])
                    editor.log("mode_set", mode=step["set_mode"])
                elif "set_config" in step:
                    config_id, value = step["set_config"]
                    response = await conn.set_config_option(
                        session_id=editor.session_id, config_id=config_id, value=value
                    )
                    editor.log("config_set", response=dump(response))
                elif "prompt" in step:
                    prompt = step["prompt"]
                    if isinstance(prompt, str):
                        blocks = [acp.text_block(prompt)]
                    else:
                        blocks = [
                            acp.text_block(b["text"])
                            if "text" in b
                            else acp.image_block(b["image"]["data"], b["image"]["mime_type"])
                            for b in prompt
                        ]
                    response = await conn.prompt(session_id=editor.session_id, prompt=blocks)
                    editor.log("prompt_response", response=dump(response))
            except acp.RequestError as error:
                editor.log("error", code=error.code, message=str(error), data=error.data)
    print(json.dumps(transcript, indent=1))


asyncio.run(main())
