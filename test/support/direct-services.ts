/**
 * The first tier of tests: services called directly with their real dependencies, no
 * server, no protocol. The database is the suite's driver (PostgreSQL with
 * DATABASE_URL, PGlite otherwise), migrated; everything else is built as app.ts builds
 * it, so a rule tested here is the rule the service runs.
 */
import { randomBytes } from "node:crypto";
import { type AdminService, createAdminService } from "../../src/admin/admin-service.js";
import { type Authenticator, createAuthenticator } from "../../src/auth/authenticator.js";
import { createFrontendTokens, type FrontendTokens } from "../../src/auth/frontend-tokens.js";
import { createKeyring, type Keyring } from "../../src/crypto/keyring.js";
import { createTokenService, type TokenService } from "../../src/events/token-service.js";
import type { Db } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { createProjectStore, type ProjectStore } from "../../src/store/projects.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { createLogSigning } from "../../src/verifiable-log/log-signing.js";
import type { EnvironmentName, PlanName } from "../../src/vocabulary/tenancy.js";
import { createIsolatedDb } from "./isolated-storage.js";

/** The services and what they stand on. */
export interface DirectServices {
  db: Db;
  projects: ProjectStore;
  keyring: Keyring;
  authenticator: Authenticator;
  frontendTokens: FrontendTokens;
  admin: AdminService;
  tokens: TokenService;
  /** A new project with one active key; its secret. */
  provision(options?: { plan?: PlanName; environment?: EnvironmentName }): Promise<{
    projectId: string;
    keyId: string;
    secret: string;
  }>;
  close(): Promise<void>;
}

/**
 * Builds the services on a database of their own. `cacheSeconds` is the authenticator's
 * key cache (60 s by default, so that a test sees what the cache would hide).
 */
export async function createDirectServices(
  options: { cacheSeconds?: number } = {},
): Promise<DirectServices> {
  const { db, cleanup } = await createIsolatedDb();
  await migrate(db);
  const keyring = createKeyring({ db, masterKey: randomBytes(32) });
  const projects = createProjectStore(db, keyring);
  const frontendTokens = createFrontendTokens({ signingKey: randomBytes(32).toString("hex") });
  const authenticator = createAuthenticator({
    projects,
    cacheSeconds: options.cacheSeconds ?? 60,
    tokens: frontendTokens,
  });
  const signing = createLogSigning({
    crypto: createNodeLogCrypto(),
    issuer: "direct-test",
    seed: randomBytes(32),
  });
  const admin = createAdminService({ projects, keyring, authenticator, db, signing });
  return {
    db,
    projects,
    keyring,
    authenticator,
    frontendTokens,
    admin,
    tokens: createTokenService({ authenticator, tokens: frontendTokens }),
    async provision(provisioned = {}) {
      const project = await admin.createProject(
        `direct ${randomBytes(3).toString("hex")}`,
        provisioned.plan ?? "pro",
      );
      const key = await admin.createApiKey(project.id, provisioned.environment ?? "test");
      return { projectId: project.id, keyId: key.record.id, secret: key.secret };
    },
    close: cleanup,
  };
}
