/**
 * Retention's rules (AdminService.SetRetention): how many days each log of a project keeps
 * its events after their receivedAt. 0 keeps them for ever (the default); otherwise 1 to
 * 36,500. The expiry job (lifecycle/retention-job.ts) erases what is older.
 * docs/lifecycle.md, "Retention".
 */
import { ServiceError } from "../errors.js";
import type { Db } from "../store/db.js";
import type { ProjectRecord, ProjectStore } from "../store/projects.js";
import {
  MAX_RETENTION_DAYS,
  type RetentionDays,
  readRetention,
  writeRetention,
} from "../store/retention.js";
import { createAhead } from "../store/retention-partitions.js";
import type { EnvironmentName } from "../vocabulary/tenancy.js";

const BOTH: readonly EnvironmentName[] = ["test", "live"];

/** Dependencies of the retention service. */
export interface RetentionDeps {
  db: Db;
  projects: Pick<ProjectStore, "getProject">;
}

/** A project with how long each of its environments keeps its events. */
export interface ProjectRetention {
  project: ProjectRecord;
  retention: RetentionDays;
}

/** The retention rules. */
export interface RetentionService {
  /** The retention of each project's environments (0: for ever), by project id. */
  retentionOf(projectIds: readonly string[]): Promise<Map<string, RetentionDays>>;
  /**
   * Sets the retention of one environment of a project, or of both when `environment` is
   * undefined; returns the project with its settings. `bad_request` for days out of range,
   * `not_found` for an unknown project.
   */
  setRetention(
    projectId: string,
    environment: EnvironmentName | undefined,
    retentionDays: number,
  ): Promise<ProjectRetention>;
}

/** Creates the retention service. */
export function createRetentionService(deps: RetentionDeps): RetentionService {
  return {
    retentionOf: (projectIds) => readRetention(deps.db, projectIds),
    async setRetention(projectId, environment, retentionDays) {
      if (
        !Number.isInteger(retentionDays) ||
        retentionDays < 0 ||
        retentionDays > MAX_RETENTION_DAYS
      ) {
        throw new ServiceError(
          "bad_request",
          `retentionDays must be 0 (keep events for ever) or 1 to ${MAX_RETENTION_DAYS} days, not ${retentionDays}`,
        );
      }
      const environments = environment ? [environment] : BOTH;
      // The period's partitions exist before any row is stamped with it (committed first),
      // so its rows never land in the periods' default partition.
      if (retentionDays > 0) await createAhead(deps.db, retentionDays, new Date());
      const found = await writeRetention(deps.db, projectId, environments, retentionDays);
      const project = found ? await deps.projects.getProject(projectId) : undefined;
      if (!project) throw new ServiceError("not_found", `Project ${projectId} not found`);
      const retention = (await readRetention(deps.db, [project.id])).get(project.id);
      return { project, retention: retention ?? { test: 0, live: 0 } };
    },
  };
}
