"""Small ffprobe/ffmpeg helpers for PRISM-Bench clips (mp4 with a video and an audio stream).

Everything runs the ``ffmpeg`` / ``ffprobe`` binaries in a subprocess (Debian package ``ffmpeg``;
``make setup`` installs it), so no Python media library is imported. Failures raise
:class:`MediaError`, whose message names the file and quotes the tail of ffmpeg's own complaint.

Writes are deterministic where it matters (:data:`BITEXACT_ARGS`): the same frames and samples give
the same bytes, so content-hashed stages see no change on a rerun.

Example:
    >>> import tempfile, numpy as np
    >>> out = Path(tempfile.mkdtemp()) / "clip.mp4"
    >>> frames = np.zeros((15, 48, 64, 3), dtype=np.uint8)
    >>> _ = encode_clip(frames, 15, np.zeros(16000, dtype=np.float32), 16000, out)
    >>> info = probe(out)
    >>> (info.width, info.height, round(info.fps), info.has_audio, round(info.duration_s, 1))
    (64, 48, 15, True, 1.0)
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.typing as npt

from omnieval.errors import OmnievalError

FloatArray = npt.NDArray[np.float32]
Frame = npt.NDArray[np.uint8]

#: Flags that keep encoder versions, timestamps and metadata out of the output bytes.
BITEXACT_ARGS: tuple[str, ...] = (
    "-map_metadata",
    "-1",
    "-fflags",
    "+bitexact",
    "-flags:v",
    "+bitexact",
    "-flags:a",
    "+bitexact",
)

#: H.264 settings of every clip omnieval encodes; one thread so frame order never depends on timing.
VIDEO_CODEC_ARGS: tuple[str, ...] = (
    "-c:v",
    "libx264",
    "-preset",
    "medium",
    "-crf",
    "26",
    "-pix_fmt",
    "yuv420p",
    "-threads",
    "1",
)

#: AAC settings (ffmpeg's native encoder, deterministic).
AUDIO_CODEC_ARGS: tuple[str, ...] = ("-c:a", "aac", "-b:a", "64k")

#: Seconds allowed for one ffmpeg/ffprobe call before it counts as failed.
TIMEOUT_S = 300


class MediaError(OmnievalError):
    """A media file could not be probed, decoded or written; ``path`` is the file concerned."""

    exit_code = 2

    def __init__(self, path: Path | str | None, detail: str) -> None:
        self.path = Path(path) if path is not None else None
        self.detail = detail
        super().__init__(f"{path}: {detail}" if path is not None else detail)


@dataclass(frozen=True)
class MediaInfo:
    """What ffprobe says about a clip.

    Attributes:
        duration_s: Container duration in seconds (the longer of the streams).
        fps: Average video frame rate in frames per second.
        width: Frame width in pixels.
        height: Frame height in pixels.
        n_frames: Video frames (from the stream header; estimated from duration x fps when absent).
        video_codec: e.g. ``h264``.
        pix_fmt: e.g. ``yuv420p``.
        has_audio: The file has at least one audio stream.
        audio_rate: Sample rate of the first audio stream in Hz (0 without audio).
        audio_channels: Channels of the first audio stream (0 without audio).
        audio_codec: e.g. ``aac`` (``""`` without audio).
        video_duration_s: Duration of the video stream (seconds; the container's when absent).
        audio_duration_s: Duration of the audio stream (seconds; 0 without audio).
    """

    duration_s: float
    fps: float
    width: int
    height: int
    n_frames: int
    video_codec: str
    pix_fmt: str
    has_audio: bool
    audio_rate: int
    audio_channels: int
    audio_codec: str
    video_duration_s: float
    audio_duration_s: float


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise MediaError(None, f"{name} is not installed (Debian package ffmpeg; `make setup` installs it)")
    return found


def _tail(text: str, limit: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    joined = " | ".join(lines[-3:])
    return joined if len(joined) <= limit else "..." + joined[-limit:]


def run_ffmpeg(
    args: Sequence[str], *, path: Path | str | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``ffmpeg -nostdin -hide_banner -loglevel error -y ARGS``; raise :class:`MediaError` on failure.

    Args:
        args: Arguments after the common ones (inputs, filters, outputs).
        path: The file the call is about, for the error message.
        stdin: Bytes piped to ffmpeg (e.g. raw frames read with ``-i pipe:0``).

    Returns:
        The finished process (stdout holds piped output such as raw samples).
    """
    command = [_binary("ffmpeg"), "-hide_banner", "-loglevel", "error", "-y"]
    if stdin is None:
        command.insert(1, "-nostdin")
    done = _run([*command, *(str(a) for a in args)], path, stdin)
    if done.returncode != 0:
        reason = _tail(done.stderr.decode("utf-8", "replace")) or f"exit code {done.returncode}"
        raise MediaError(path, f"ffmpeg failed: {reason}")
    return done


def _run(
    command: list[str], path: Path | str | None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run an ffmpeg or ffprobe ``command`` (its exit status is the caller's to read)."""
    try:
        return subprocess.run(command, input=stdin, capture_output=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise MediaError(path, f"{Path(command[0]).name} took longer than {TIMEOUT_S} s") from None


def _ratio(text: object) -> float:
    try:
        value = Fraction(str(text))
    except (ValueError, ZeroDivisionError):
        return 0.0
    return float(value)


def _float(value: object, default: float = 0.0) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def probe(path: Path | str, *, decode_s: float | None = None) -> MediaInfo:
    """Read the container and stream headers of ``path`` with ffprobe.

    Args:
        path: The clip.
        decode_s: Also decode the first ``decode_s`` seconds of every stream in the same ffprobe
            call (headers alone do not show garbage packets); None reads headers only.

    Raises:
        MediaError: the file is missing, ffprobe cannot read it (not a media file, truncated
            container), it has no video stream, or (with ``decode_s``) decoding reports an error
            or yields no video frame.
    """
    path = Path(path)
    if not path.is_file():
        raise MediaError(path, "file not found")
    command = [
        _binary("ffprobe"),
        "-v",
        "error",
        "-show_entries",
        "format=duration:stream=codec_type,codec_name,avg_frame_rate,r_frame_rate,width,height,"
        "nb_frames,pix_fmt,sample_rate,channels,duration" + (":frame=media_type" if decode_s else ""),
        *(["-read_intervals", f"%+{decode_s:g}"] if decode_s else []),
        "-of",
        "json",
        str(path),
    ]
    done = _run(command, path)
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        raise MediaError(path, f"not a readable media file ({_tail(stderr) or 'ffprobe failed'})")
    info = json.loads(done.stdout or "{}")
    streams = info.get("streams") or []
    video = next((s for s in streams if s.get("codec_type") == "video"), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    if video is None:
        raise MediaError(path, "no video stream")
    if decode_s:
        if stderr.strip():
            raise MediaError(path, f"decoding failed ({_tail(stderr)})")
        if not any(f.get("media_type") == "video" for f in info.get("frames") or []):
            raise MediaError(path, f"no video frame decodes in the first {decode_s:g} s")
    duration = _float((info.get("format") or {}).get("duration"))
    fps = _ratio(video.get("avg_frame_rate")) or _ratio(video.get("r_frame_rate"))
    video_duration = _float(video.get("duration"), duration)
    n_frames = int(_float(video.get("nb_frames"), round(video_duration * fps)))
    return MediaInfo(
        duration_s=duration,
        fps=fps,
        width=int(video.get("width") or 0),
        height=int(video.get("height") or 0),
        n_frames=n_frames,
        video_codec=str(video.get("codec_name") or ""),
        pix_fmt=str(video.get("pix_fmt") or ""),
        has_audio=audio is not None,
        audio_rate=int(_float((audio or {}).get("sample_rate"))),
        audio_channels=int((audio or {}).get("channels") or 0),
        audio_codec=str((audio or {}).get("codec_name") or ""),
        video_duration_s=video_duration,
        audio_duration_s=_float((audio or {}).get("duration"), duration) if audio is not None else 0.0,
    )


def _audio_track(path: Path | str, sr: int) -> list[str]:
    """ffmpeg arguments that read the first audio stream of ``path`` as mono at ``sr`` Hz."""
    return ["-i", str(path), "-vn", "-map", "0:a:0", "-ac", "1", "-ar", str(sr)]


def decode_audio(path: Path | str, *, sr: int = 16000) -> FloatArray:
    """The audio track of a clip (or an audio file) as mono float32 samples in [-1, 1], shape ``(n,)``.

    Args:
        path: Media file.
        sr: Output sample rate in Hz.

    Raises:
        MediaError: no audio stream or undecodable.
    """
    done = run_ffmpeg([*_audio_track(path, sr), "-f", "f32le", "pipe:1"], path=path)
    return np.frombuffer(done.stdout, dtype="<f4").astype(np.float32)


def extract_audio(video: Path | str, wav_out: Path | str, *, sr: int = 16000) -> Path:
    """Write a clip's audio track as mono 16-bit PCM WAV (``sr`` Hz), atomically.

    Returns:
        ``wav_out``.
    """
    wav_out = Path(wav_out)
    wav_out.parent.mkdir(parents=True, exist_ok=True)
    tmp = wav_out.with_name(wav_out.stem + ".partial.wav")
    try:
        run_ffmpeg([*_audio_track(video, sr), "-c:a", "pcm_s16le", *BITEXACT_ARGS, str(tmp)], path=video)
        tmp.replace(wav_out)
    finally:
        tmp.unlink(missing_ok=True)
    return wav_out


def extract_frames(
    video: Path | str,
    *,
    times_s: Sequence[float] | None = None,
    fps: float | None = None,
    size: tuple[int, int] | None = None,
) -> list[Frame]:
    """RGB frames of a clip as ``uint8`` arrays of shape ``(height, width, 3)``.

    Give exactly one of ``times_s`` (the frame shown at each time, in order) or ``fps`` (frames
    sampled at that rate from the start).

    Args:
        video: The clip.
        times_s: Seconds from the start; each gives the frame on screen at that time (the last
            frame starting at or before it, assuming a constant frame rate).
        fps: Sampling rate in frames per second.
        size: ``(width, height)`` to scale to; the clip's own size when None.

    Raises:
        MediaError: undecodable, or a time past the end of the clip.
        ValueError: both or neither of ``times_s`` and ``fps``.
    """
    if (times_s is None) == (fps is None):
        raise ValueError("give exactly one of times_s and fps")
    info = probe(video)
    width, height = size or (info.width, info.height)
    frame_bytes = width * height * 3
    scale = f"scale={width}:{height}" if size else ""

    def read(inputs: list[str], *, sample: str = "", limit: list[str] | None = None) -> list[Frame]:
        chain = ",".join(f for f in (sample, scale) if f)
        filters = ["-vf", chain] if chain else []
        raw = ["-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"]
        data = run_ffmpeg([*inputs, "-map", "0:v:0", *filters, *(limit or []), *raw], path=video).stdout
        return [
            np.frombuffer(data, np.uint8, frame_bytes, i * frame_bytes).reshape(height, width, 3)
            for i in range(len(data) // frame_bytes)
        ]

    if fps is not None:
        return read(["-i", str(video)], sample=f"fps={fps:g}")
    frames: list[Frame] = []
    for t in times_s or ():
        if t < 0 or t > info.duration_s:
            raise MediaError(video, f"time {t:g} s is outside the clip (0-{info.duration_s:g} s)")
        # ffmpeg returns the first frame at or after the seek point; the frame on screen at ``t``
        # started at most one frame earlier, so seek a quarter frame before its start.
        start = math.floor(t * info.fps + 1e-6) / info.fps if info.fps > 0 else t
        got = read(
            ["-ss", f"{max(0.0, start - 0.25 / max(info.fps, 1.0)):.6f}", "-i", str(video)],
            limit=["-frames:v", "1"],
        )
        if not got:
            # Seeking to the very end can land after the last frame: take the last one instead.
            got = read(["-sseof", "-0.5", "-i", str(video)])[-1:]
        if not got:
            raise MediaError(video, f"no frame at {t:g} s")
        frames.append(got[0])
    return frames


def _write_wav(path: Path, samples: FloatArray, sr: int) -> None:
    import soundfile as sf

    data = np.asarray(samples, dtype=np.float32)
    sf.write(str(path), np.clip(data, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")


def encode_clip(
    frames: npt.NDArray[np.uint8],
    fps: int,
    audio: FloatArray,
    sr: int,
    out: Path | str,
) -> Path:
    """Encode RGB frames and a mono track as an H.264 + AAC mp4 (yuv420p), atomically and bit-exactly.

    Args:
        frames: Shape ``(n_frames, height, width, 3)``, uint8 RGB; width and height even.
        fps: Frames per second.
        audio: Mono samples in [-1, 1], shape ``(n,)``; clipped when outside.
        sr: Sample rate of ``audio`` in Hz.
        out: The mp4 to write.

    Returns:
        ``out``.
    """
    frames = np.ascontiguousarray(frames, dtype=np.uint8)
    if frames.ndim != 4 or frames.shape[3] != 3:
        raise ValueError(f"frames must have shape (n, height, width, 3), got {frames.shape}")
    _, height, width, _ = frames.shape
    out = Path(out)
    raw_video = [
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        f"{width}x{height}",
        "-r",
        str(fps),
        "-i",
        "pipe:0",
    ]
    return _mux_with_track(
        raw_video,
        VIDEO_CODEC_ARGS,
        audio,
        sr,
        out,
        scratch_prefix=".encode.",
        about=out,
        stdin=frames.tobytes(),
    )


def replace_audio(video: Path | str, audio: FloatArray, sr: int, out: Path | str) -> Path:
    """Copy ``video``'s picture stream untouched and give it ``audio`` (mono, AAC) instead of its own.

    The new track is cut or zero-padded to the video stream's duration, so the clip keeps its length.

    Args:
        video: Source clip (its first video stream is kept bit for bit).
        audio: Mono samples in [-1, 1], shape ``(n,)``.
        sr: Sample rate of ``audio`` in Hz.
        out: The mp4 to write (atomically; may not be ``video`` itself).

    Returns:
        ``out``.
    """
    video, out = Path(video), Path(out)
    if out.resolve() == video.resolve():
        raise ValueError("replace_audio cannot write over its input")
    info = probe(video)
    n = round(info.video_duration_s * sr)
    track = fit_length(np.asarray(audio, dtype=np.float32), n)
    return _mux_with_track(
        ["-i", str(video)], ("-c:v", "copy"), track, sr, out, scratch_prefix=".remux.", about=video
    )


def _mux_with_track(
    video_input: Sequence[str],
    video_codec: Sequence[str],
    audio: FloatArray,
    sr: int,
    out: Path,
    *,
    scratch_prefix: str,
    about: Path,
    stdin: bytes | None = None,
) -> Path:
    """Write ``out`` from a video input (ffmpeg input 0) and ``audio`` as a 16-bit WAV (input 1).

    Encoding and remuxing both go through here so that the audio encoding, the stream mapping and the
    bit-exact flags are the same for every clip PRISM writes. The WAV and the new mp4 live in a
    scratch folder beside ``out``; the mp4 replaces ``out`` only once ffmpeg succeeded.

    Args:
        video_input: ffmpeg arguments that open the picture source (ending with its ``-i``).
        video_codec: How the picture stream is written (encoded, or copied).
        audio: Mono samples in [-1, 1].
        sr: Sample rate of ``audio`` in Hz.
        out: The mp4 to write.
        scratch_prefix: Name prefix of the scratch folder.
        about: The file an ffmpeg error message names.
        stdin: Bytes piped to ffmpeg (raw frames for ``-i pipe:0``).

    Returns:
        ``out``.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=scratch_prefix, dir=out.parent) as scratch:
        wav = Path(scratch) / "audio.wav"
        _write_wav(wav, audio, sr)
        tmp = Path(scratch) / "clip.mp4"
        args = [*video_input, "-i", str(wav), "-map", "0:v:0", "-map", "1:a:0"]
        run_ffmpeg(
            [*args, *video_codec, *AUDIO_CODEC_ARGS, *BITEXACT_ARGS, str(tmp)], path=about, stdin=stdin
        )
        tmp.replace(out)
    return out


def fit_length(samples: FloatArray, n: int) -> FloatArray:
    """``samples`` cut to ``n`` or padded with zeros at the end to ``n``.

    >>> fit_length(np.ones(3, dtype=np.float32), 5).tolist(), fit_length(np.ones(3, dtype=np.float32), 2).tolist()
    ([1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0])
    """
    if samples.shape[0] >= n:
        return samples[:n]
    return np.concatenate([samples, np.zeros(n - samples.shape[0], dtype=samples.dtype)])
