/** The one validator of an Event body (its shape: vocabulary/event-input.ts). */
import { EventSchema } from "../../gen/audit/v1/event_pb.js";
import type { EventInput } from "../vocabulary/event-input.js";
import { compileValidator } from "./validation.js";

/** Validates an Event body; compiled once from the proto's declared rules. */
export const eventValidator = compileValidator<EventInput>(EventSchema);
