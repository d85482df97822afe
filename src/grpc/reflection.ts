import { toBinary } from "@bufbuild/protobuf";
import type { DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { Server } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { file_grpc_health_v1_health } from "@proxybroker/sdk/gen/grpc/health/v1/health_pb";
import { file_proxybroker_v1_admin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";

/**
 * gRPC server reflection from the protobuf-es descriptors: @grpc/reflection only reads the
 * serialized FileDescriptorProtos of a package definition, so we hand it ours (with their
 * dependencies) instead of loading .proto files at run time.
 */
export function addReflection(server: Pick<Server, "addService">): void {
  const files = new Map<string, Uint8Array>();
  const visit = (file: DescFile): void => {
    if (files.has(file.proto.name)) return;
    for (const dep of file.dependencies) visit(dep);
    files.set(file.proto.name, toBinary(FileDescriptorProtoSchema, file.proto));
  };
  visit(file_proxybroker_v1_admin);
  visit(file_grpc_health_v1_health);
  const definition = { descriptors: { fileDescriptorProtos: [...files.values()] } } as unknown as ConstructorParameters<
    typeof ReflectionService
  >[0];
  new ReflectionService(definition).addToServer(server);
}
