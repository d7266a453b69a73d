#!/usr/bin/env bash
# Regenerates the project's own tiny test clips with the ffmpeg CLI (Debian's ffmpeg 5.1).
# Every clip is synthetic (testsrc2, sine tones): no third-party footage.
set -euo pipefail
cd "$(dirname "$0")"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# 2 s, 320x180, 30 fps, H.264 + AAC stereo tone, BT.709 tagged: the main job's sample clip.
ff -f lavfi -i testsrc2=size=320x180:rate=30:duration=2 -f lavfi -i sine=frequency=440:sample_rate=48000:duration=2 \
   -ac 2 -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -g 30 -bf 2 \
   -colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range tv \
   -c:a aac -b:a 96k -shortest -movflags +faststart testsrc-320x180-30fps-audio.mp4

# 2 s, 161x91 (odd sides), 25 fps, VP9 4:2:0 in WebM, BT.601 (SMPTE 170M) tagged, no audio.
ff -f lavfi -i testsrc2=size=160x90:rate=25:duration=2 -vf scale=161:91,setsar=1 -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 200k \
   -pix_fmt yuv420p -colorspace smpte170m -color_primaries smpte170m -color_trc smpte170m -color_range tv \
   odd-161x91-25fps.webm

# Variable frame rate: 30 frames at 30 fps then 20 frames at 10 fps, H.264 in Matroska (1 ms time base),
# with an SRT subtitle stream and a mono Vorbis tone.
ff -f lavfi -i testsrc2=size=160x90:rate=30:duration=1.6667 -f lavfi -i sine=frequency=660:sample_rate=44100:duration=3 \
   -i vfr-subtitles.srt \
   -vf "setpts='if(lt(N,30),N/30,1+(N-30)/10)/TB'" -fps_mode vfr -frames:v 50 \
   -c:v libx264 -preset veryfast -crf 22 -pix_fmt yuv420p -c:a libvorbis -q:a 2 -c:s srt \
   -map 0:v -map 1:a -map 2:s vfr-160x90-subs.mkv

# 1 s, 240x136, 24 fps, MPEG-4 part 2 in AVI, no colour tags (exercises the explicit BT.601/709 rule).
ff -f lavfi -i testsrc2=size=240x136:rate=24:duration=1 -c:v mpeg4 -q:v 4 -pix_fmt yuv420p untagged-240x136-24fps.avi

# 1 s, 192x108, 25 fps, H.264 in MP4 with a 90-degree display rotation and 4:3 pixels (SAR 4:3).
# ffmpeg 5.1 writes the rotation (a display matrix) only when stream-copying, hence two steps.
ff -f lavfi -i testsrc2=size=192x108:rate=25:duration=1 -c:v libx264 -preset veryfast -crf 22 -pix_fmt yuv420p \
   -vf setsar=4/3 rotated-tmp.mp4
ff -i rotated-tmp.mp4 -c copy -metadata:s:v:0 rotate=90 rotated-sar-192x108.mp4
rm -f rotated-tmp.mp4
