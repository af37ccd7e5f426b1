// Inside EinDriver: the fabric part of `einc calibrate` (CalibrateFabric.cpp)
// and the calibration file's writer it shares with Calibrate.cpp.
#pragma once

#include "ein/Driver/Calibrate.h"

#include <string>
#include <vector>

namespace ein {

/// Writes every figure of `c` that is set (CPU, fabric) to
/// calibrationPath(), replacing the file.
ErrorOr<void> writeCalibration(const Calibration &c);

/// The ranks calibrate launches: 4 where the host has 4 cores or more, else
/// 2 (one per core on a 2-core host).
int hostFabricRanks();

/// Launches `ranks` ranks of this einc's `calibrate` under mpirun and
/// returns their report; never fails: without MPI or mpirun, or when the
/// job fails, the text says the fabric was not measured and why.
std::string measureHostFabric(int ranks);

/// One rank of the measurement (`einc calibrate` under mpirun): times each
/// collective kind from 64 B to 64 MiB by factors of 2 on the MPI world,
/// fits each kind's table (fitCollective) and all-reduce's alpha and B
/// (fitFabric), checks the model at 48 KiB, 3 MiB and 24 MiB (sizes not
/// measured), and on rank 0 stores the fit and returns the report ("" on
/// the other ranks).
ErrorOr<std::string> runFabricRank();

/// One rank of `einc calibrate --check SIZES` under mpirun: times each
/// collective kind at `checkBytes` and compares it with the host fabric
/// stored by an earlier `einc calibrate` on as many ranks; rank 0 returns
/// the comparison ("" on the other ranks).
ErrorOr<std::string> checkFabricRank(const std::vector<int64_t> &checkBytes);

} // namespace ein
