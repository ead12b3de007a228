/** A tool's own failure: the model sees its message as an error tool return; nothing is retried. */
export class ToolError extends Error {
  override name = 'ToolError';
}
