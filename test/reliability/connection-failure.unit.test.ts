/** Which errors stand for a database that cannot be reached (503), and which are a statement's (500). */
import { describe, expect, it } from "vitest";
import { isConnectionFailure, toServiceError } from "../../src/errors.js";

const failure = (code: string, message = "x") => Object.assign(new Error(message), { code });

describe("a lost or refused database connection", () => {
  it.each([
    "ECONNREFUSED",
    "ENOTFOUND",
    "CONNECTION_CLOSED",
    "57P01",
    "57P02",
    "57P03",
    "53300",
    "08006",
    "08001",
    "3D000",
    "28P01",
  ])("%s is unavailable (503)", (code) => {
    expect(isConnectionFailure(failure(code))).toBe(true);
    expect(toServiceError(failure(code))?.kind).toBe("unavailable");
  });

  it("55000 only as a refusal of connections", () => {
    expect(
      isConnectionFailure(failure("55000", 'database "x" is not currently accepting connections')),
    ).toBe(true);
    expect(isConnectionFailure(failure("55000", "lock is not available"))).toBe(false);
  });

  it.each(["23505", "42P01", "22021", "40001", "XX000"])("%s is a statement's error", (code) => {
    expect(isConnectionFailure(failure(code))).toBe(false);
    expect(toServiceError(failure(code))).toBeUndefined();
  });
});
