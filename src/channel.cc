// Copyright 2026 The stubkit Authors.

#include "stubkit/channel.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>

namespace stubkit {

grpc::ChannelArguments ChannelArgumentsWithoutGrpcRetries(
    grpc::ChannelArguments args) {
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return args;
}

std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& target,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    grpc::ChannelArguments args) {
  return grpc::CreateCustomChannel(
      target, credentials, ChannelArgumentsWithoutGrpcRetries(std::move(args)));
}

}  // namespace stubkit
