/** The baseline's one activity: it does nothing, so its cost is Temporal's alone. */
export const baselineActivities = () => ({
  async noop(): Promise<void> {},
});
