// PodQuery's Watch handler on an in-process core, without a transport.
import assert from "node:assert/strict";
import { FieldMaskCache } from "../../src/fieldmask/mod.ts";
import {
  decodeWatchEvent,
  encodePod,
  encodeWatchRequest,
  POD_SCHEMA,
  QUERY_EVENT_TYPE,
} from "../../src/proto/mod.ts";
import { STATUS, toStatus } from "../../src/server/errors.ts";
import { PodQueryService } from "../../src/server/pod_query_service.ts";
import { makeSnapshot } from "../_fixtures/pods.ts";
import { collectingSink, ctxOf } from "../_support/collecting_sink.ts";
import { inProcessCore } from "../_support/in_process_core.ts";

Deno.test("PodQueryService.watch() writes a batch at once: the initial list, then what one apply changed", async () => {
  const c = inProcessCore();
  const service = new PodQueryService({
    core: c.core,
    masks: new FieldMaskCache(POD_SCHEMA),
    encode: encodePod,
  });
  const uids = ["uid-a", "uid-b", "uid-c"];
  c.apply(uids.map((uid) => makeSnapshot({ uid, name: uid })));
  const client = new AbortController();
  const sink = collectingSink();
  const watching = service.watch(encodeWatchRequest(), ctxOf({}, "podsapi_v1", client.signal), sink)
    .catch((err: unknown) => toStatus(err).code);
  while (sink.messages.length < 4) await sink.sent;
  assert.deepEqual(sink.writes, [4], "three ADDED and INITIAL_SYNC_COMPLETE, one write");
  c.apply(uids.slice(0, 2).map((uid) => makeSnapshot({ uid, name: uid, labels: { v: "2" } })));
  while (sink.messages.length < 7) await sink.sent;
  assert.deepEqual(sink.writes, [4, 3], "two MODIFIED and a DELETED, one write");
  const events = sink.messages.map(decodeWatchEvent);
  assert.deepEqual(events.map((e) => e.type), [
    QUERY_EVENT_TYPE.ADDED,
    QUERY_EVENT_TYPE.ADDED,
    QUERY_EVENT_TYPE.ADDED,
    QUERY_EVENT_TYPE.INITIAL_SYNC_COMPLETE,
    ...events.slice(4).map((e) => e.type),
  ]);
  assert.deepEqual(
    events.slice(4).map((e) => e.type).sort(),
    [
      QUERY_EVENT_TYPE.MODIFIED,
      QUERY_EVENT_TYPE.MODIFIED,
      QUERY_EVENT_TYPE.DELETED,
    ].sort(),
  );
  // Every change carries its own token, in order.
  const tokens = events.slice(4).map((e) => e.resumeToken);
  assert.equal(new Set(tokens).size, 3);
  client.abort();
  c.apply([]);
  assert.equal(await watching, STATUS.CANCELLED);
});
