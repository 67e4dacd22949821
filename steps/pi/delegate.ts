// flow's delegate tool for pi (docs/drivers.md, Delegation). flow writes
// this file, with the tool's definition filled in, for a turn that may
// delegate; each call is the turn's token and one JSON line to the run's
// delegation socket, and one JSON line back.
import { connect } from "node:net";

const def = /*DEFINITION*/ {};

function call(params, signal) {
	return new Promise((resolve, reject) => {
		const socket = process.env[def.socketEnv];
		if (!socket) {
			reject(new Error(`delegate: ${def.socketEnv} is not set`));
			return;
		}
		const conn = connect(socket);
		let buf = "";
		let done = false;
		const settle = (f, v) => {
			if (done) return;
			done = true;
			signal?.removeEventListener("abort", onAbort);
			conn.destroy();
			f(v);
		};
		const onAbort = () => settle(reject, new Error("delegate: the call was stopped"));
		signal?.addEventListener("abort", onAbort, { once: true });
		conn.setEncoding("utf8");
		conn.on("connect", () => {
			// The token first, on a line of its own: the server checks it, and
			// who is calling, before it reads the request.
			const token = process.env[def.tokenEnv] ?? "";
			conn.write(token + "\n" + JSON.stringify({ token, agent: params.agent, task: params.task }) + "\n");
		});
		conn.on("data", (chunk) => {
			buf += chunk;
			const i = buf.indexOf("\n");
			if (i < 0) return;
			try {
				settle(resolve, JSON.parse(buf.slice(0, i)));
			} catch (e) {
				settle(reject, new Error(`delegate: a reply that is not JSON: ${e.message}`));
			}
		});
		conn.on("error", (e) => settle(reject, new Error(`delegate: ${e.message}`)));
		conn.on("close", () => settle(reject, new Error("delegate: the server closed the call without a reply")));
	});
}

export default function (pi) {
	pi.registerTool({
		name: def.name,
		label: "Delegate",
		description: def.description,
		promptSnippet: "Hand a task to another agent and get its answer",
		parameters: def.parameters,
		async execute(_toolCallId, params, signal) {
			const reply = await call(params, signal);
			// A thrown error is the tool's error result, which the model reads.
			if (reply.error) throw new Error(reply.error);
			return { content: [{ type: "text", text: reply.answer ?? "" }], details: {} };
		},
	});
}
