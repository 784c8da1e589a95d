// An editor for the ACP tests: the protocol's official TypeScript SDK
// (@agentclientprotocol/sdk, installed under .ci/ by `npm ci --prefix .ci`)
// as the client of the real `lc-agent acp`. It runs one scenario and
// prints what it saw as one JSON report on stdout.
//
// Environment: ACP_CI_DIR (the folder whose node_modules has the SDK),
// ACP_COMMAND (JSON list: the agent's program and arguments), ACP_WORK (the
// session's cwd), ACP_SCENARIO (`turns` or `load`), ACP_SESSION (`load`:
// the session to load), ACP_BUFFERS (JSON: path -> the text an open,
// unsaved editor buffer holds), ACP_ANSWERS (JSON list: how to answer each
// permission request in turn: an optionId, or `cancel`), ACP_PROMPTS (JSON
// list of prompts, one turn each), ACP_SET_MODE (a session mode to set
// before the prompts).

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const env = process.env;
const require = createRequire(`${env.ACP_CI_DIR}/package.json`);
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

const [program, ...args] = JSON.parse(env.ACP_COMMAND);
const agentProcess = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
agentProcess.stderr.on("data", (chunk) => (stderr += chunk));
const exited = new Promise((resolve) => agentProcess.on("exit", (code) => resolve(code)));

const buffers = JSON.parse(env.ACP_BUFFERS ?? "{}");
const answers = JSON.parse(env.ACP_ANSWERS ?? "[]");
const report = { updates: [], permissions: [], reads: [], writes: [], turns: [] };

const client = acp
  .client({ name: "lc-agent-tests" })
  .onNotification("session/update", (ctx) => {
    report.updates.push(ctx.params);
  })
  .onRequest("session/request_permission", async (ctx) => {
    report.permissions.push(ctx.params);
    const answer = answers.shift();
    if (answer === "cancel" || answer === undefined) {
      // As the protocol asks: cancel the turn, then answer every pending
      // permission request with `cancelled`.
      await ctx.agent.notify("session/cancel", { sessionId: ctx.params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: answer } };
  })
  .onRequest("fs/read_text_file", (ctx) => {
    report.reads.push(ctx.params.path);
    const content = buffers[ctx.params.path] ?? readFileSync(ctx.params.path, "utf8");
    return { content };
  })
  .onRequest("fs/write_text_file", (ctx) => {
    report.writes.push({ path: ctx.params.path, content: ctx.params.content });
    buffers[ctx.params.path] = ctx.params.content;
    writeFileSync(ctx.params.path, ctx.params.content);
    return {};
  });

const stream = acp.ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));

async function turns(agent, sessionId) {
  for (const text of JSON.parse(env.ACP_PROMPTS ?? "[]")) {
    const from = report.updates.length;
    try {
      const answer = await agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      report.turns.push({ stopReason: answer.stopReason, updates: report.updates.slice(from) });
    } catch (error) {
      report.turns.push({ error: String(error?.message ?? error), data: error?.data, updates: report.updates.slice(from) });
    }
  }
}

try {
  await client.connectWith(stream, async (agent) => {
    report.initialize = await agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "lc-agent-tests", version: "1.0.0" },
    });
    let sessionId;
    if (env.ACP_SCENARIO === "load") {
      sessionId = env.ACP_SESSION;
      const from = report.updates.length;
      report.load = await agent.request("session/load", { sessionId, cwd: env.ACP_WORK, mcpServers: [] });
      report.replayed = report.updates.slice(from);
    } else {
      report.created = await agent.request("session/new", { cwd: env.ACP_WORK, mcpServers: [] });
      sessionId = report.created.sessionId;
    }
    report.sessionId = sessionId;
    report.modes = (report.load ?? report.created).modes;
    if (env.ACP_SET_MODE) {
      report.setMode = await agent.request("session/set_mode", { sessionId, modeId: env.ACP_SET_MODE });
    }
    await turns(agent, sessionId);
  });
} catch (error) {
  report.error = String(error?.stack ?? error);
}
agentProcess.stdin.end();
report.exitCode = await exited;
report.stderr = stderr;
process.stdout.write(JSON.stringify(report) + "\n");
