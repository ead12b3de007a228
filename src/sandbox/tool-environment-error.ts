import { ToolError } from '../returns/tool-error';

/**
 * A tool's requirements could not be installed: the tool's failure (the model sees why), not the
 * sandbox's, so the call is not retried.
 */
export class ToolEnvironmentError extends ToolError {
  override name = 'ToolEnvironmentError';
}
