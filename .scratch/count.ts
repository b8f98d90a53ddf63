import { searchTokens } from "../src/crypto/blind-index.js";
import { sampleEvent } from "../bench/event-body.js";
const e = sampleEvent(12345) as Record<string,string>;
const texts = [e.actorId,e.actorDisplay,e.entityType,e.entityId,e.actionKey,e.actionDescription,e.tenantId,e.source];
const t = searchTokens(texts); console.log(t.length); console.log(t.join(" "));
