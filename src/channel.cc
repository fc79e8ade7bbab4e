// Copyright 2026 The stubkit Authors.

#include "stubkit/channel.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>

#include <string>

#include "stubkit/internal/engine/connection_channel.h"

namespace stubkit {
namespace {

// The value of `key` in `args`, or "" when it is not a string argument there.
std::string StringArg(const grpc::ChannelArguments& args, const char* key) {
  grpc_channel_args c_args = args.c_channel_args();
  for (size_t i = 0; i < c_args.num_args; ++i) {
    if (c_args.args[i].type == GRPC_ARG_STRING &&
        key == std::string(c_args.args[i].key)) {
      return c_args.args[i].value.string;
    }
  }
  return "";
}

}  // namespace

grpc::ChannelArguments ChannelArgumentsWithoutGrpcRetries(
    grpc::ChannelArguments args) {
  // grpc::ChannelArguments keeps repeated keys and gRPC 1.51 honours the
  // first, so appending a 0 loses to a caller's own setting. Copy the
  // arguments without it instead (ChannelArguments has no way to remove one).
  grpc::ChannelArguments out;
  out.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  const std::string default_user_agent =
      StringArg(out, GRPC_ARG_PRIMARY_USER_AGENT_STRING);
  grpc_channel_args c_args = args.c_channel_args();
  for (size_t i = 0; i < c_args.num_args; ++i) {
    const grpc_arg& arg = c_args.args[i];
    const std::string key = arg.key;
    if (key == GRPC_ARG_ENABLE_RETRIES) continue;
    if (key == GRPC_ARG_PRIMARY_USER_AGENT_STRING &&
        arg.type == GRPC_ARG_STRING) {
      // Every ChannelArguments starts with this entry; carry over only the
      // caller's prefix (SetUserAgentPrefix), not a second entry.
      std::string value = arg.value.string;
      if (value == default_user_agent) continue;
      const std::string suffix = " " + default_user_agent;
      if (value.size() > suffix.size() &&
          value.compare(value.size() - suffix.size(), suffix.size(), suffix) ==
              0) {
        value.resize(value.size() - suffix.size());
      }
      out.SetUserAgentPrefix(value);
      continue;
    }
    switch (arg.type) {
      case GRPC_ARG_INTEGER:
        out.SetInt(key, arg.value.integer);
        break;
      case GRPC_ARG_STRING:
        out.SetString(key, arg.value.string);
        break;
      case GRPC_ARG_POINTER:
        out.SetPointerWithVtable(key, arg.value.pointer.p,
                                 arg.value.pointer.vtable);
        break;
    }
  }
  return out;
}

std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& target,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    grpc::ChannelArguments args) {
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target, credentials, ChannelArgumentsWithoutGrpcRetries(std::move(args)));
  // So that a client over it does not warn about gRPC's retries: they are
  // off whatever its service config says (see ConnectionChannel::CheckGrpcRetries).
  internal::RememberStubkitChannel(channel);
  return channel;
}

}  // namespace stubkit
