import type { ServiceError } from "@grpc/grpc-js";

/** The error a call failed with; throws when it did not fail. */
export async function statusOf(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error("expected the call to fail");
}
