// What `pods-api whois` says when the daemon cannot look a process up: the
// daemon's own words on what to grant or why to retry, not the generic ones
// the CLI has for those status codes ("still syncing", "lost the daemon").
import assert from "node:assert/strict";
import { describeError } from "../../src/client/cli_io.ts";
import { lookupError } from "../../src/client/whois_command.ts";
import { GrpcError, STATUS } from "../../src/grpc/status.ts";
import { REFUSAL_MESSAGES } from "../../src/serving/refusal.ts";

const said = (err: GrpcError) => describeError(lookupError(err));

Deno.test("whois reports a missing grant and a descriptor shortage in the daemon's words", () => {
  const grant = 'Cannot read "/proc/42/cgroup" (permission denied): grant the host\'s /proc';
  assert.equal(
    said(new GrpcError(STATUS.FAILED_PRECONDITION, grant)),
    `Process lookups cannot answer on this node: ${grant}`,
  );
  const fds = 'Cannot open "/proc/42/cgroup": the daemon has no file descriptor left';
  assert.equal(
    said(new GrpcError(STATUS.UNAVAILABLE, fds)),
    `The daemon could not look the process up now: ${fds}`,
  );
});

Deno.test("whois keeps the CLI's words for the daemon's own refusals and for the rest", () => {
  const syncing = new GrpcError(STATUS.FAILED_PRECONDITION, REFUSAL_MESSAGES["not_synced"]);
  assert.match(said(syncing), /still syncing/);
  const stopping = new GrpcError(STATUS.UNAVAILABLE, REFUSAL_MESSAGES["shutting_down"]);
  assert.match(said(stopping), /^Lost the daemon/);
  const notFound = new GrpcError(STATUS.NOT_FOUND, 'Process "7" is not in a container of any pod');
  assert.equal(lookupError(notFound), notFound);
  const other = new Error("boom");
  assert.equal(lookupError(other), other);
});
