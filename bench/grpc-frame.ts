/**
 * Writes a gRPC request body (one length-prefixed CreateEventRequest frame, the same
 * ~1 KB event as the REST load) for h2load, which replays it as fast as the server
 * takes it. Usage: grpc-frame.ts <output file>.
 */
import { writeFileSync } from "node:fs";
import { fromJson, toBinary } from "@bufbuild/protobuf";
import { EventSchema } from "../gen/audit/v1/event_pb.js";
import { sampleEvent } from "./event-body.js";

const output = process.argv[2];
if (!output) throw new Error("usage: grpc-frame.ts <output file>");
const message = toBinary(EventSchema, fromJson(EventSchema, sampleEvent(1) as never));
const frame = Buffer.alloc(5 + message.length);
frame.writeUInt8(0, 0); // not compressed
frame.writeUInt32BE(message.length, 1);
Buffer.from(message).copy(frame, 5);
writeFileSync(output, frame);
