/**
 * Both drivers write array parameters as array literals (src/store/array-literal.ts). Each literal must read back,
 * through the statement's cast, as exactly the values sent. Runs on the suite's driver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { arrayLiteral } from "../../src/store/array-literal.js";
import type { Db } from "../../src/store/db.js";
import { createIsolatedDb } from "../support/isolated-storage.js";

let db: Db;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
});

afterAll(async () => {
  await cleanup();
});

const readBack = async (values: readonly unknown[], type: string) =>
  (
    await db.query<{ value: unknown }>(
      `select value from unnest($1::${type}[]) with ordinality as t(value, n) order by n`,
      [arrayLiteral(values)],
    )
  ).map((row) => row.value);

describe("array literals", () => {
  it("bytea: any bytes, empty values and nulls", async () => {
    const values = [Buffer.from([0, 1, 0x5c, 0x22, 0xff]), null, Buffer.alloc(0)];
    const back = (await readBack(values, "bytea")) as (Uint8Array | null)[];
    expect(back.map((value) => (value === null ? null : Buffer.from(value)))).toEqual(values);
    // A view into a larger buffer sends only its own bytes.
    const view = Buffer.from([9, 8, 7, 6]).subarray(1, 3);
    const [one] = (await readBack([view], "bytea")) as Uint8Array[];
    expect(Buffer.from(one ?? [])).toEqual(Buffer.from([8, 7]));
  });

  it("text: quotes, backslashes, braces, commas, spaces, the word NULL and empty strings", async () => {
    const values = ['a"b\\c', null, "{x,y}", "", "NULL", " spaced ", "é 日 😀"];
    expect(await readBack(values, "text")).toEqual(values);
  });

  it("timestamptz, uuid, int4 and int8 (both ends of the range)", async () => {
    const dates = [new Date(0), new Date("2026-11-23T12:34:56.789Z")];
    expect(await readBack(dates, "timestamptz")).toEqual(dates);
    const uuids = ["0192b3c4-0000-7000-8000-000000000001", null];
    expect(await readBack(uuids, "uuid")).toEqual(uuids);
    expect(await readBack([1, -2, null], "int4")).toEqual([1, -2, null]);
    const bigints = [-9223372036854775808n, 9223372036854775807n, 0n];
    const back = await readBack(bigints, "int8");
    expect(back.map((value) => BigInt(value as string | number | bigint))).toEqual(bigints);
  });

  it("an empty array is an empty array", async () => {
    expect(await readBack([], "text")).toEqual([]);
  });

  it("a nested array or an object is refused, not sent as its string form", () => {
    expect(() => arrayLiteral([[1, 2]])).toThrow(TypeError);
    expect(() => arrayLiteral([{ a: 1 }])).toThrow(TypeError);
  });

  it("the driver itself sends array parameters as literals: bytea[] and int8[] read back", async () => {
    const rows = await db.query<{ bytes: Uint8Array; number: string }>(
      `select b as bytes, n::text as number
         from unnest($1::bytea[], $2::int8[]) with ordinality as t(b, n, i) order by i`,
      [
        [Buffer.from([0, 0x5c, 0xff]), Buffer.alloc(0)],
        ["-9223372036854775808", "7"],
      ],
    );
    expect(rows.map((row) => [Buffer.from(row.bytes), row.number])).toEqual([
      [Buffer.from([0, 0x5c, 0xff]), "-9223372036854775808"],
      [Buffer.alloc(0), "7"],
    ]);
  });
});
