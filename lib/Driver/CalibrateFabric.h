// Inside EinDriver: the fabric part of `einc calibrate` (CalibrateFabric.cpp)
// and the calibration file's writer it shares with Calibrate.cpp.
#pragma once

#include "ein/Driver/Calibrate.h"

#include <string>

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

/// One rank of the measurement (`einc calibrate` under mpirun): sweeps
/// all-reduce from 8 B to 64 MiB on the MPI world, fits alpha and B,
/// times the four collectives at 64 KiB, 1 MiB and 16 MiB against the
/// model, and on rank 0 stores the fit and returns the report ("" on the
/// other ranks).
ErrorOr<std::string> runFabricRank();

} // namespace ein
