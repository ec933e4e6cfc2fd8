#pragma once
// The exit statuses every mgpr program and the job template agree on. Scripts and the
// template tell "you typed it wrong" (2) from "it failed" (1) and from "stopped before
// walltime, resumable: requeue me" (3); the template is rendered from kExitStopped.
namespace mgpr {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitStopped = 3;
// What a shell gives for a program it cannot find; run_command reports the same.
inline constexpr int kExitCommandNotFound = 127;

}  // namespace mgpr
