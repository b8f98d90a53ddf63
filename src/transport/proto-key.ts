/**
 * A key named `__proto__` stays a key. With `Object.prototype.__proto__` in place,
 * `object["__proto__"] = value` replaces the object's prototype instead of adding a key:
 * protobuf-es fills a google.protobuf.Struct's map that way while it decodes a Connect,
 * gRPC-Web or gRPC request, so such a key in an event's `context`, `before` or `after`
 * vanished before validation could refuse it as REST does (422: it could not be read
 * back). Without the accessor (what `node --disable-proto=delete` does), the assignment
 * makes an own property, which validation sees and refuses on every protocol. Object
 * literals' `__proto__:` syntax and Object.getPrototypeOf/setPrototypeOf are unaffected.
 */

/** Removes the `__proto__` accessor from Object.prototype (once; idempotent). */
export function keepProtoKeysAsKeys(): void {
  Reflect.deleteProperty(Object.prototype, "__proto__");
}
