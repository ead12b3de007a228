/** What the agents of a folder see of its files (`files_agents`, migration 0015). */
import type { Queryable } from '../db';

/** Shows a file of a folder to every agent the folder is attached to (closed until it is opened). */
export async function showFileToAgents(db: Queryable, fileId: string): Promise<void> {
  await db.query(
    `INSERT INTO files_agents (id, agent_id, file_id, folder_id, file_name)
     SELECT 'file_agent-' || gen_random_uuid(), af.agent_id, f.id, f.folder_id, f.file_name
     FROM files f JOIN agents_folders af ON af.folder_id = f.folder_id WHERE f.id = $1
     ON CONFLICT (agent_id, file_id) DO NOTHING`,
    [fileId],
  );
}
