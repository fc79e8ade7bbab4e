"""stubkit_cc_grpc_library: a decorated gRPC client from .proto files.

    load("@stubkit//bazel:defs.bzl", "stubkit_cc_grpc_library")

    stubkit_cc_grpc_library(
        name = "echo_grpc",
        srcs = ["echo.proto"],
    )

    cc_binary(name = "app", srcs = ["app.cc"], deps = [":echo_grpc"])
    # app.cc: #include "echo.stubkit.h" (path relative to the import root)

The macro runs the system protoc once over `srcs` with three plugins --
protobuf's C++ generator, /usr/bin/grpc_cpp_plugin and protoc-gen-stubkit
(built from source by Bazel) -- and compiles the result into a cc_library
`name` that carries protobuf, gRPC++ and the stubkit runtime. It also makes
`name + "_mock"` (testonly), which adds GoogleTest's gMock for code that
includes the generated `*.stubkit_mock.h`.

A proto's import path is its path from the repository root, like
proto_library; `strip_import_prefix` changes that: "/protos" strips
`protos/` from the repository root, "protos" strips it from this package.
`deps` are other stubkit_cc_grpc_library targets whose protos `srcs` import.
Well-known types (google/protobuf/*.proto) come from the system protobuf.

This is not proto_library: the native proto rules would need
@com_google_protobuf, which an offline build against Debian's protobuf
doesn't have.
"""

load("@stubkit_system//:well_known_protos.bzl", "WELL_KNOWN_PROTOS_DIR")

StubkitProtoInfo = provider(
    doc = "Protos compiled by a stubkit_cc_grpc_library, for importers.",
    fields = {
        "transitive_sources": "depset of .proto Files, this target's and its deps'",
        "transitive_import_roots": "depset of protoc -I directories",
    },
)

def _import_root(ctx):
    """The directory (exec-root relative) that import paths start from."""
    repo_root = ctx.label.workspace_root  # "" or "external/<repo>"
    prefix = ctx.attr.strip_import_prefix
    if not prefix:
        rel = ""
    elif prefix.startswith("/"):
        rel = prefix[1:]
    else:
        rel = ctx.label.package + "/" + prefix if ctx.label.package else prefix
    rel = rel.rstrip("/")
    if repo_root and rel:
        return repo_root + "/" + rel
    return repo_root or rel

def _stubkit_proto_gen_impl(ctx):
    root = _import_root(ctx)
    outputs_cc = []
    outputs_h = []
    proto_paths = []
    suffixes_cc = [".pb.cc", ".grpc.pb.cc"]
    suffixes_h = [".pb.h", ".grpc.pb.h"]
    if ctx.attr.stubkit_plugin:
        suffixes_cc.append(".stubkit.cc")
        suffixes_h += [".stubkit.h", ".stubkit_mock.h"]

    # Each target writes into its own directory, so two targets may compile
    # the same proto (e.g. with and without the stubkit plugin).
    gen_dir = "_stubkit_gen/" + ctx.label.name
    for src in ctx.files.srcs:
        if not src.path.endswith(".proto"):
            fail("%s: %s is not a .proto file" % (ctx.label, src.path))
        if root and not src.path.startswith(root + "/"):
            fail("%s: %s is not under the import root %s (strip_import_prefix)" %
                 (ctx.label, src.path, root))
        import_path = src.path[len(root) + 1:] if root else src.path
        proto_paths.append(import_path)
        stem = gen_dir + "/" + import_path[:-len(".proto")]
        outputs_cc += [ctx.actions.declare_file(stem + x) for x in suffixes_cc]
        outputs_h += [ctx.actions.declare_file(stem + x) for x in suffixes_h]

    dep_infos = [d[StubkitProtoInfo] for d in ctx.attr.deps]
    transitive_sources = depset(
        ctx.files.srcs,
        transitive = [i.transitive_sources for i in dep_infos],
    )
    transitive_import_roots = depset(
        [root or "."],
        transitive = [i.transitive_import_roots for i in dep_infos],
    )

    out_dir = "/".join([
        part
        for part in [ctx.bin_dir.path, ctx.label.workspace_root, ctx.label.package, gen_dir]
        if part
    ])
    args = ctx.actions.args()
    args.add_all(transitive_import_roots, format_each = "-I%s")
    args.add("-I" + WELL_KNOWN_PROTOS_DIR)
    args.add("--cpp_out=" + out_dir)
    args.add("--plugin=protoc-gen-grpc=" + ctx.executable._grpc_cpp_plugin.path)
    args.add("--grpc_out=" + out_dir)
    tools = [ctx.executable._grpc_cpp_plugin]
    if ctx.attr.stubkit_plugin:
        args.add("--plugin=protoc-gen-stubkit=" + ctx.executable.stubkit_plugin.path)
        args.add("--stubkit_out=" + out_dir)
        tools.append(ctx.executable.stubkit_plugin)
    args.add_all(proto_paths)

    ctx.actions.run(
        executable = ctx.executable._protoc,
        arguments = [args],
        inputs = transitive_sources,
        tools = tools,
        outputs = outputs_cc + outputs_h,
        mnemonic = "StubkitProtoc",
        progress_message = "Generating C++ for %s" % ctx.label,
    )

    return [
        DefaultInfo(files = depset(outputs_cc + outputs_h)),
        CcInfo(compilation_context = cc_common.create_compilation_context(
            headers = depset(outputs_h),
            includes = depset([out_dir]),
        )),
        StubkitProtoInfo(
            transitive_sources = transitive_sources,
            transitive_import_roots = transitive_import_roots,
        ),
    ]

_stubkit_proto_gen = rule(
    implementation = _stubkit_proto_gen_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".proto"], mandatory = True),
        "deps": attr.label_list(providers = [StubkitProtoInfo]),
        "strip_import_prefix": attr.string(),
        "_protoc": attr.label(
            default = "@stubkit_system//:protoc",
            executable = True,
            allow_single_file = True,
            cfg = "exec",
        ),
        "_grpc_cpp_plugin": attr.label(
            default = "@stubkit_system//:grpc_cpp_plugin",
            executable = True,
            allow_single_file = True,
            cfg = "exec",
        ),
        # Set by the macro, so that the raw variant needs no plugin.
        "stubkit_plugin": attr.label(executable = True, cfg = "exec"),
    },
)

def _gen_label(dep):
    """The generation rule behind a stubkit_cc_grpc_library label."""
    if ":" in dep:
        return dep + "_gen"
    if "//" in dep:
        return dep + ":" + dep.split("/")[-1] + "_gen"
    return ":" + dep + "_gen"

def _cc_grpc_library(name, srcs, deps, strip_import_prefix, stubkit, **kwargs):
    gen = name + "_gen"
    _stubkit_proto_gen(
        name = gen,
        srcs = srcs,
        deps = [_gen_label(d) for d in deps],
        strip_import_prefix = strip_import_prefix,
        stubkit_plugin = Label("//src/generator:protoc-gen-stubkit") if stubkit else None,
        visibility = kwargs.get("visibility"),
        testonly = kwargs.get("testonly"),
        tags = kwargs.get("tags"),
    )
    runtime = [
        "@stubkit_system//:protobuf",
        "@stubkit_system//:grpc++",
    ]
    if stubkit:
        runtime.append(Label("//:stubkit"))
    native.cc_library(
        name = name,
        srcs = [":" + gen],
        deps = [":" + gen] + deps + runtime,
        **kwargs
    )

def stubkit_cc_grpc_library(name, srcs, deps = [], strip_import_prefix = "", **kwargs):
    """Messages, gRPC stubs and stubkit clients for `srcs`, as a cc_library.

    Args:
      name: the cc_library; `name + "_mock"` adds gMock for the mocks.
      srcs: .proto files of this package.
      deps: stubkit_cc_grpc_library targets whose protos `srcs` import.
      strip_import_prefix: like proto_library's: "/dir" from the repository
        root, "dir" from this package.
      **kwargs: visibility, testonly, tags, ... of the cc_library.
    """
    _cc_grpc_library(name, srcs, deps, strip_import_prefix, True, **kwargs)
    mock_kwargs = dict(kwargs)
    mock_kwargs["testonly"] = True
    native.cc_library(
        name = name + "_mock",
        deps = [":" + name, "@stubkit_system//:gmock"],
        **mock_kwargs
    )

def stubkit_cc_grpc_raw_library(name, srcs, deps = [], strip_import_prefix = "", **kwargs):
    """Like stubkit_cc_grpc_library without the stubkit plugin: messages and
    grpc_cpp_plugin stubs only (what stubkit's own runtime tests use)."""
    _cc_grpc_library(name, srcs, deps, strip_import_prefix, False, **kwargs)
